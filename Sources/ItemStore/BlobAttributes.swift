// Attributes iOS keeps as blobs, which an app may give as a String or as Data. Both
// compare by their bytes: the keyed hash of Data("k") is the hash of "k". Within the
// store a value given as Data is its bytes in hex, the attribute named in `marker`
// with the others given so, so that it goes back to the app as Data; generic, whose
// store value is always hex, is named in `textMarker` when it was given as a String.
// Requests and replies carry such values in their own typed maps
// (KeychainRequest.dataAttributes, textAttributes), never in hex.
import DPFSProtocol
import Foundation

enum BlobAttributes {
    /// Of the identity: hashed by their bytes (ItemIdentity).
    static let keyNames: Set<KeyAttribute> = [.service, .account, .path, .securityDomain, .server]
    /// Sealed in the record only: the label (hashed by its bytes, RowColumns) and the
    /// descriptive attributes compared in the opened record (ItemQuery).
    static let sealedNames: Set<String> = ["label", DescriptiveAttribute.description.rawValue,
                                           DescriptiveAttribute.comment.rawValue]
    /// What a request may give as Data.
    static let dataNames = Set(keyNames.map(\.rawValue)).union(sealedNames)
    /// What a request may give as text where the store keeps bytes in hex.
    static let textNames: Set<String> = [DescriptiveAttribute.generic.rawValue]

    /// The name under which the store's own attribute maps (a find's before its reply,
    /// an export, a synchronized item) list the attributes given as Data.
    static let marker = "dataAttributes"
    /// The name under which they list those of `textNames` given as text.
    static let textMarker = "textAttributes"

    /// A marker's value.
    static func list(_ names: some Sequence<String>) -> String {
        names.sorted().joined(separator: " ")
    }

    /// The names a marker lists; nil when it names one outside `allowed`.
    static func parse(_ list: String?, allowed: Set<String> = dataNames) -> Set<String>? {
        var names: Set<String> = []
        for name in (list ?? "").split(separator: " ") {
            guard allowed.contains(String(name)) else { return nil }
            names.insert(String(name))
        }
        return names
    }

    /// The bytes a stored value stands for: those in hex when it was given as Data,
    /// else its text's.
    static func bytes(_ value: String, hex: Bool) -> Data {
        if hex, let bytes = Data(hexString: value) { return bytes }
        return Data(value.utf8)
    }

    /// A map with its markers split into text attributes, Data ones and text given
    /// where bytes are kept; nil for those there are none of. errSecDecode when a
    /// marker names an attribute that is not there in hex.
    static func split(_ attributes: [String: String]) throws
        -> (text: [String: String], data: [String: Data]?, textGiven: [String: String]?) {
        var text = attributes
        let dataList = text.removeValue(forKey: marker), textList = text.removeValue(forKey: textMarker)
        guard let dataNamed = parse(dataList), let textNamed = parse(textList, allowed: textNames) else {
            throw SecError(SecStatus.decode, "an item names unknown data attributes")
        }
        var data: [String: Data] = [:], textGiven: [String: String] = [:]
        for name in dataNamed.union(textNamed) {
            guard let hex = text.removeValue(forKey: name), let bytes = Data(hexString: hex) else {
                throw SecError(SecStatus.decode, "an item's \(name) is not the bytes it was given as")
            }
            if dataNamed.contains(name) {
                data[name] = bytes
            } else {
                guard let given = String(validating: bytes, as: UTF8.self) else {
                    throw SecError(SecStatus.decode, "an item's \(name) is not the text it was given as")
                }
                textGiven[name] = given
            }
        }
        return (text, data.isEmpty ? nil : data, textGiven.isEmpty ? nil : textGiven)
    }

    /// A reply's item made of the store's attributes.
    static func replyItem(_ attributes: [String: String]?, data: Data?) throws -> KeychainResponse.Item {
        guard let attributes else { return KeychainResponse.Item(data: data) }
        let (text, dataAttributes, textAttributes) = try split(attributes)
        return KeychainResponse.Item(attributes: text, dataAttributes: dataAttributes, textAttributes: textAttributes,
                                     data: data)
    }
}
