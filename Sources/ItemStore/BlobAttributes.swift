// Attributes iOS keeps as blobs (service, account, path, security domain), which an
// app may give as a String or as Data. Both compare by their bytes: the keyed hash of
// Data("k") is the hash of "k". Within the store a value given as Data is its bytes
// in hex, the attribute named in `marker` with the others given so, so that it goes
// back to the app as Data; requests and replies carry such values in their own typed
// map (KeychainRequest.dataAttributes), never in hex.
import DPFSProtocol
import Foundation

enum BlobAttributes {
    static let names: Set<KeyAttribute> = [.service, .account, .path, .securityDomain]

    /// The name under which the store's own attribute maps (a find's before its reply,
    /// an export, a synchronized item) list the attributes given as Data.
    static let marker = "dataAttributes"

    /// The marker's value.
    static func list(_ attributes: Set<KeyAttribute>) -> String {
        attributes.map(\.rawValue).sorted().joined(separator: " ")
    }

    /// The attributes a marker names; nil when it names one that is no blob.
    static func parse(_ list: String) -> Set<KeyAttribute>? {
        var attributes: Set<KeyAttribute> = []
        for name in list.split(separator: " ") {
            guard let attribute = KeyAttribute(rawValue: String(name)), names.contains(attribute) else { return nil }
            attributes.insert(attribute)
        }
        return attributes
    }

    /// A map with the marker split into text attributes and Data ones, as a reply or
    /// a request carries them; nil for the data when there is none. errSecDecode when
    /// the marker names an attribute that is not there in hex.
    static func split(_ attributes: [String: String]) throws -> (text: [String: String], data: [String: Data]?) {
        var text = attributes
        guard let list = text.removeValue(forKey: marker) else { return (text, nil) }
        guard let named = parse(list) else { throw SecError(SecStatus.decode, "an item names unknown data attributes") }
        var data: [String: Data] = [:]
        for attribute in named {
            guard let hex = text.removeValue(forKey: attribute.rawValue), let bytes = Data(hexString: hex) else {
                throw SecError(SecStatus.decode, "an item's \(attribute.rawValue) is not the bytes it was given as")
            }
            data[attribute.rawValue] = bytes
        }
        return (text, data.isEmpty ? nil : data)
    }

    /// A reply's item made of the store's attributes.
    static func replyItem(_ attributes: [String: String]?, data: Data?) throws -> KeychainResponse.Item {
        guard let attributes else { return KeychainResponse.Item(data: data) }
        let (text, dataAttributes) = try split(attributes)
        return KeychainResponse.Item(attributes: text, dataAttributes: dataAttributes, data: data)
    }
}
