// Sealing of item secrets: XChaCha20-Poly1305 under the class key of the item's
// accessibility. The additional data binds the row id and the row digest (which
// covers the class, synchronizable, the accessibility and every hashed attribute),
// so a sealed secret moved to another row, group or class fails to open.
import DataProtection
import Foundation

struct ItemCrypto {
    let device: LockStateManager
    let keys: ItemKeys

    static func additionalData(id: Int64, digest: Data) -> [UInt8] {
        additionalData("dpfs.keychain.secret.v2", id: id, digest: digest)
    }

    /// What a seal of row `id` binds: `tag` (which seal), the row id and its digest.
    static func additionalData(_ tag: String, id: Int64, digest: Data) -> [UInt8] {
        var fields = FieldList()
        fields.append(tag)
        fields.append(String(id))
        fields.append(digest)
        return fields.bytes
    }

    /// Seals `plaintext`; errSecInteractionNotAllowed when the class key is not in memory.
    func seal(_ plaintext: UnsafeRawBufferPointer, id: Int64, columns: RowColumns,
              accessibility: Accessibility) throws -> Data {
        let ad = Self.additionalData(id: id, digest: columns.digest(keys))
        var sealed = Data(count: plaintext.count + AEAD.overhead)
        let done: Void? = device.withClassKey(accessibility.protectionClass) { key in
            ad.withUnsafeBytes { ad in
                sealed.withUnsafeMutableBytes { AEAD.seal(plaintext, additionalData: ad, key: key.pointer, into: $0) }
            }
        }
        guard done != nil else { throw Self.unavailable(accessibility) }
        return sealed
    }

    /// An item's secret for the reply. It goes straight into the reply's Data: the
    /// control protocol carries item data as Data, so a locked-memory stage on the
    /// way would protect nothing and cost a guarded allocation per lookup.
    func openForReply(_ item: StoredItem) throws -> Data {
        var data = Data(count: max(0, (item.secret?.count ?? 0) - AEAD.overhead))
        try data.withUnsafeMutableBytes { try open(item, into: $0) }
        return data
    }

    /// Lends `body` an item's secret in locked memory that is freed when `body`
    /// returns, for secrets that never leave the store (resealing).
    func withSecret<R>(of item: StoredItem, _ body: (UnsafeRawBufferPointer) throws -> R) throws -> R {
        let secret = SecureBuffer(count: max(0, (item.secret?.count ?? 0) - AEAD.overhead))
        try open(item, into: secret.mutableBytes)
        // The buffer's bytes are borrowed: keep it alive until body is done with them.
        return try withExtendedLifetime(secret) { try body(secret.bytes) }
    }

    /// errSecInteractionNotAllowed when the class key is not in memory, errSecDecode
    /// when the row was altered.
    private func open(_ item: StoredItem, into output: UnsafeMutableRawBufferPointer) throws {
        guard let accessibility = item.accessibility, let sealed = item.secret,
              sealed.count - AEAD.overhead == output.count else {
            throw StoredItem.damaged
        }
        let ad = Self.additionalData(id: item.id, digest: item.digest(keys))
        let opened: Bool? = device.withClassKey(accessibility.protectionClass) { key in
            sealed.withUnsafeBytes { input in
                ad.withUnsafeBytes { AEAD.open(input, additionalData: $0, key: key.pointer, into: output) }
            }
        }
        guard let opened else { throw Self.unavailable(accessibility) }
        guard opened else { throw SecError(SecStatus.decode, "a keychain item's secret fails its integrity check") }
    }

    static func unavailable(_ accessibility: Accessibility) -> SecError {
        let when = accessibility.protectionClass == .complete ? "while the device is locked" : "until the first unlock after a restart"
        return SecError(SecStatus.interactionNotAllowed, "\(accessibility.rawValue) items are unavailable \(when)")
    }
}
