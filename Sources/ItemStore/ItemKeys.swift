// The item store's two metadata subkeys (dpfs(5) "Keychain database"): the index key,
// under which every attribute a query can name is stored as a keyed hash, and the
// attributes key, under which an item's full attribute set is sealed. Both come from
// the device's metadata key (so from the device secret, never stored in the device
// directory) and, like it, are there in every lock state: on iOS an item's
// attributes are readable while its class key is not, and finds use an index.
import DataProtection
import Foundation

struct ItemKeys: Sendable {
    /// BLAKE2b-128: a collision would only make two items look alike (a false
    /// errSecDuplicateItem), and 2^64 items are far beyond any keychain.
    static let hashSize = 16

    let index: SecureBuffer
    let attributes: SecureBuffer
    /// The hash of each key attribute's absent value, which every row and query of
    /// the other class carries: computed once.
    private let absentHashes: [KeyAttribute: Data]

    init(metadataKey: SecureBuffer) {
        index = Self.subkey(of: metadataKey, purpose: "dpfs.keychain.index.v2")
        attributes = Self.subkey(of: metadataKey, purpose: "dpfs.keychain.attributes.v2")
        var absent: [KeyAttribute: Data] = [:]
        for key in KeyAttribute.allCases { absent[key] = Self.attributeHash(key.rawValue, key.absent, index: index) }
        absentHashes = absent
    }

    /// The stored form of a key attribute's value.
    func keyHash(_ key: KeyAttribute, _ value: String) -> Data {
        if value == key.absent, let known = absentHashes[key] { return known }
        return attributeHash(key.rawValue, value)
    }

    /// The stored form of a key attribute given as bytes: the hash of the text of
    /// those bytes, so the two compare by their bytes (BlobAttributes).
    func keyHash(_ key: KeyAttribute, bytes: Data) -> Data {
        var fields = FieldList()
        fields.append("dpfs.keychain.attribute.v2")
        fields.append(key.rawValue)
        fields.append(bytes)
        return Self.hash(fields.bytes, index: index)
    }

    /// BLAKE2b-256 of the purpose string, keyed with the metadata key.
    private static func subkey(of key: SecureBuffer, purpose: String) -> SecureBuffer {
        let subkey = SecureBuffer(count: AEAD.keySize)
        Array(purpose.utf8).withUnsafeBytes { Sodium.hash($0, key: key.bytes, into: subkey.mutableBytes) }
        return subkey
    }

    /// The stored form of one attribute: BLAKE2b-128 under the index key of the
    /// length-prefixed fields "dpfs.keychain.attribute.v2", name, value. The name in
    /// the input keeps equal values of different attributes apart.
    func attributeHash(_ name: String, _ value: String) -> Data {
        Self.attributeHash(name, value, index: index)
    }

    /// The hash of an attribute by its bytes: of a text, the hash of its UTF-8.
    func attributeHash(_ name: String, bytes: Data) -> Data {
        var fields = FieldList()
        fields.append("dpfs.keychain.attribute.v2")
        fields.append(name)
        fields.append(bytes)
        return Self.hash(fields.bytes, index: index)
    }

    private static func attributeHash(_ name: String, _ value: String, index: SecureBuffer) -> Data {
        var fields = FieldList()
        fields.append("dpfs.keychain.attribute.v2")
        fields.append(name)
        fields.append(value)
        return hash(fields.bytes, index: index)
    }

    /// BLAKE2b-128 under the index key.
    func hash(_ message: [UInt8]) -> Data { Self.hash(message, index: index) }

    private static func hash(_ message: [UInt8], index: SecureBuffer) -> Data {
        var digest = Data(count: hashSize)
        message.withUnsafeBytes { input in
            digest.withUnsafeMutableBytes { Sodium.hash(input, key: index.bytes, into: $0) }
        }
        return digest
    }
}
