// An item's attributes in clear, as they are sealed in the row's `attributes` column:
// XChaCha20-Poly1305 under the attributes key (ItemKeys), the associated data binding
// the row id and the row digest, so a sealed set moved to another row, or left in a
// row whose hashed or clear columns were edited, fails to open (errSecDecode for
// that item only).
import DataProtection
import Foundation

struct ItemRecord: Sendable {
    var identity: ItemIdentity
    var label: String?
    /// Of a key item: its public key (X9.63, hex), so a key found while its class is
    /// locked still has one.
    var publicKey: String?
    /// Unix time in seconds. Sealed, not clear: when a password was set or last
    /// changed is nobody's business either.
    var created: Double
    var modified: Double
    /// kSecAttrAccessControl, sealed with the other attributes; nil for an item without.
    var accessControl: StoredAccessControl?
    /// Canonical values (DescriptiveAttribute.canonical).
    var descriptive: [DescriptiveAttribute: String]
    /// The label, description or comment given as Data: their value is the bytes in
    /// hex (BlobAttributes).
    var dataValued: Set<String>
    /// Generic given as a String.
    var textValued: Set<String>

    init(identity: ItemIdentity, label: String?, publicKey: String? = nil, created: Double, modified: Double,
         accessControl: StoredAccessControl? = nil, descriptive: [DescriptiveAttribute: String] = [:],
         dataValued: Set<String> = [], textValued: Set<String> = []) {
        self.identity = identity; self.label = label; self.publicKey = publicKey
        self.created = created; self.modified = modified
        self.accessControl = accessControl
        self.descriptive = descriptive
        // Only attributes the item has are given in a type.
        let has = { (name: String) in
            name == "label" ? label != nil : DescriptiveAttribute(rawValue: name).map { descriptive[$0] != nil } ?? false
        }
        self.dataValued = dataValued.filter(has)
        self.textValued = textValued.filter(has)
    }

    /// Every attribute given as Data, as the marker lists them.
    var allDataValued: Set<String> { dataValued.union(identity.dataValued.map(\.rawValue)) }

    var labelIsData: Bool { dataValued.contains("label") }

    /// The bytes of a descriptive attribute's value as given (BlobAttributes).
    func descriptiveBytes(_ attribute: DescriptiveAttribute) -> Data? {
        descriptive[attribute].map {
            BlobAttributes.bytes($0, hex: attribute == .generic || dataValued.contains(attribute.rawValue))
        }
    }

    static func additionalData(id: Int64, digest: Data) -> [UInt8] {
        ItemCrypto.additionalData("dpfs.keychain.attributes.v2", id: id, digest: digest)
    }

    /// The plaintext: length-prefixed name/value pairs (dpfs(5)). Class and
    /// synchronizable are the row's clear columns, which the digest binds.
    private var encoded: [UInt8] {
        var pairs: [(String, String)] = identity.itemClass.keyAttributes.map { ($0.rawValue, identity.keys[$0] ?? $0.absent) }
        pairs += [("accessGroup", identity.accessGroup), ("created", String(created)), ("modified", String(modified))]
        if let label { pairs.append(("label", label)) }
        if let accessControl { pairs += accessControl.pairs }
        if let publicKey { pairs.append(("publicKey", publicKey)) }
        if !allDataValued.isEmpty { pairs.append((BlobAttributes.marker, BlobAttributes.list(allDataValued))) }
        if !textValued.isEmpty { pairs.append((BlobAttributes.textMarker, BlobAttributes.list(textValued))) }
        for attribute in DescriptiveAttribute.allCases {
            if let value = descriptive[attribute] { pairs.append((attribute.rawValue, value)) }
        }
        return FieldEncoding.lengthPrefixed(pairs.flatMap { [Array($0.0.utf8), Array($0.1.utf8)] })
    }

    func seal(id: Int64, columns: RowColumns, keys: ItemKeys) -> Data {
        let plaintext = encoded
        let ad = Self.additionalData(id: id, digest: columns.digest(keys))
        var sealed = Data(count: plaintext.count + AEAD.overhead)
        plaintext.withUnsafeBytes { input in
            ad.withUnsafeBytes { ad in
                sealed.withUnsafeMutableBytes { AEAD.seal(input, additionalData: ad, key: keys.attributes.pointer, into: $0) }
            }
        }
        return sealed
    }

    /// The attributes of a stored item; errSecDecode when they fail their seal or parse.
    init(opening item: StoredItem, keys: ItemKeys) throws {
        let values = try Self.opened(item, keys: keys).withUnsafeBytes(Self.pairs)
        let itemClass = item.columns.itemClass
        var keyValues: [KeyAttribute: String] = [:]
        for key in itemClass.keyAttributes {
            guard let value = values[key.rawValue] else { throw Self.unreadable }
            keyValues[key] = value
        }
        guard let group = values["accessGroup"], let created = values["created"].flatMap(Double.init),
              let modified = values["modified"].flatMap(Double.init) else { throw Self.unreadable }
        guard let dataValued = BlobAttributes.parse(values[BlobAttributes.marker]),
              let textValued = BlobAttributes.parse(values[BlobAttributes.textMarker], allowed: BlobAttributes.textNames) else {
            throw Self.unreadable
        }
        identity = ItemIdentity(itemClass: itemClass, given: keyValues, accessGroup: group,
                                synchronizable: item.columns.synchronizable,
                                dataValued: Set(dataValued.compactMap(KeyAttribute.init(rawValue:))))
        self.dataValued = dataValued.intersection(BlobAttributes.sealedNames)
        self.textValued = textValued
        label = values["label"]
        accessControl = try StoredAccessControl(values)
        publicKey = values["publicKey"]
        var descriptive: [DescriptiveAttribute: String] = [:]
        for attribute in DescriptiveAttribute.allCases { descriptive[attribute] = values[attribute.rawValue] }
        self.descriptive = descriptive
        self.created = created
        self.modified = modified
    }

    /// The plaintext of a stored item's sealed attributes; errSecDecode when they fail
    /// their seal.
    private static func opened(_ item: StoredItem, keys: ItemKeys) throws -> [UInt8] {
        let sealed = item.sealedAttributes
        guard sealed.count >= AEAD.overhead else { throw unreadable }
        let ad = additionalData(id: item.id, digest: item.digest(keys))
        var plaintext = [UInt8](repeating: 0, count: sealed.count - AEAD.overhead)
        let opened = sealed.withUnsafeBytes { input in
            ad.withUnsafeBytes { ad in
                plaintext.withUnsafeMutableBytes { AEAD.open(input, additionalData: ad, key: keys.attributes.pointer, into: $0) }
            }
        }
        guard opened else { throw unreadable }
        return plaintext
    }

    /// What reading a stored item's data must check first, opened as `init(opening:)`
    /// opens the whole record (the seal checked, the pairs' framing too) but with only
    /// these fields made into values: a find of data needs nothing else from them.
    static func gate(opening item: StoredItem, keys: ItemKeys) throws -> AccessGate {
        try opened(item, keys: keys).withUnsafeBytes { plaintext in
            guard let fields = FieldEncoding.slices(plaintext), fields.count % 2 == 0 else { throw unreadable }
            func text(_ field: UnsafeRawBufferPointer) throws -> String {
                guard let text = String(validating: field, as: UTF8.self) else { throw unreadable }
                return text
            }
            var flags: String?, domain: String?, token: String?
            for pair in stride(from: 0, to: fields.count, by: 2) {
                let name = fields[pair]
                if name.elementsEqual("accessControl".utf8) {
                    flags = try text(fields[pair + 1])
                } else if name.elementsEqual("accessControlDomain".utf8) {
                    domain = try text(fields[pair + 1])
                } else if name.elementsEqual(KeyAttribute.tokenID.rawValue.utf8) {
                    token = try text(fields[pair + 1])
                }
            }
            var values: [String: String] = [:]
            if let flags { values["accessControl"] = flags }
            if let domain { values["accessControlDomain"] = domain }
            return AccessGate(accessControl: try StoredAccessControl(values), isEnclaveKey: token == SecureEnclaveKeys.tokenID)
        }
    }

    /// The name/value pairs of an opened record, read in place (no copy per field).
    private static func pairs(_ plaintext: UnsafeRawBufferPointer) throws -> [String: String] {
        guard let fields = FieldEncoding.slices(plaintext), fields.count % 2 == 0 else { throw unreadable }
        var values: [String: String] = [:]
        values.reserveCapacity(fields.count / 2)
        for pair in stride(from: 0, to: fields.count, by: 2) {
            guard let name = String(validating: fields[pair], as: UTF8.self),
                  let value = String(validating: fields[pair + 1], as: UTF8.self) else { throw unreadable }
            values[name] = value
        }
        return values
    }

    static let unreadable = SecError(SecStatus.decode, "a keychain item's attributes fail their integrity check")
}

/// An item's access control and whether it is a Secure Enclave key, which asks at each
/// use of its key instead (ItemStore+AccessControl).
struct AccessGate {
    var accessControl: StoredAccessControl?
    var isEnclaveKey: Bool

    init(accessControl: StoredAccessControl?, isEnclaveKey: Bool) {
        self.accessControl = accessControl; self.isEnclaveKey = isEnclaveKey
    }

    init(_ record: ItemRecord) {
        self.init(accessControl: record.accessControl, isEnclaveKey: record.identity.keys[.tokenID] == SecureEnclaveKeys.tokenID)
    }
}
