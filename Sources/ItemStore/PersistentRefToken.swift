// The token of an item's persistent reference (DPFSProtocol's PersistentReference):
// the item's row id, which the row keeps for its whole life (an update changes the
// row in place; AUTOINCREMENT never gives a deleted row's id to another), sealed so
// that a ref says nothing but which item it is. A bare row id would tell an app how
// many items other apps have added since its last; a token it could forge would let
// it probe for them. So the token is deterministic authenticated encryption under the
// index key (SIV-style): a 16-byte tag, BLAKE2b of the class and the id, then the id
// masked with BLAKE2b of the tag. The same item always gives the same ref, and the
// index key lasts as long as the device's items, so refs survive restarts and
// remounts; a ref made by another device fails its tag and finds nothing.
import DataProtection
import DPFSProtocol
import Foundation

extension ItemKeys {
    func persistentReference(to id: Int64, itemClass: ItemClass) -> PersistentReference? {
        let tag = refTag(id, itemClass)
        let mask = refMask(tag)
        var token = Array(tag)
        withUnsafeBytes(of: id.bigEndian) { idBytes in
            for (index, byte) in idBytes.enumerated() { token.append(byte ^ mask[index]) }
        }
        return PersistentReference(itemClass: itemClass.rawValue, token: token)
    }

    /// The row id a reference names, nil when its token was not made by this store
    /// for an item of its class.
    func itemID(of reference: PersistentReference, itemClass: ItemClass) -> Int64? {
        guard reference.itemClass == itemClass.rawValue else { return nil }
        let tag = Data(reference.token.prefix(Self.hashSize))
        let mask = refMask(tag)
        var unmasked: UInt64 = 0
        for (index, byte) in reference.token.dropFirst(Self.hashSize).enumerated() {
            unmasked = unmasked << 8 | UInt64(byte ^ mask[index])
        }
        let id = Int64(bitPattern: unmasked)
        guard id > 0 else { return nil }
        let expected = refTag(id, itemClass)
        let genuine = tag.withUnsafeBytes { given in expected.withUnsafeBytes { Sodium.equal(given, $0) } }
        return genuine ? id : nil
    }

    private func refTag(_ id: Int64, _ itemClass: ItemClass) -> Data {
        var fields = FieldList()
        fields.append("dpfs.keychain.persistentref.tag.v1")
        fields.append(itemClass.rawValue)
        fields.append(String(id))
        return hash(fields.bytes)
    }

    private func refMask(_ tag: Data) -> Data {
        var fields = FieldList()
        fields.append("dpfs.keychain.persistentref.mask.v1")
        fields.append(tag)
        return hash(fields.bytes)
    }
}

extension ItemStore {
    /// The attributes a find or an add returns of an item, its persistent reference
    /// among them.
    func replyAttributes(of record: ItemRecord, id: Int64, accessibleName: String) -> [String: String] {
        var attributes = StoredItem.attributes(of: record, accessibleName: accessibleName)
        attributes[PersistentReference.attributeName] = keys.persistentReference(to: id, itemClass: record.identity.itemClass)?.hex
        return attributes
    }
}
