// Sealing of item secrets: XChaCha20-Poly1305 under the class key of the item's
// accessibility. The additional data binds the row id, the identity and the
// accessibility, so a sealed secret moved to another row, group or class fails to open.
import DataProtection
import Foundation

struct ItemCrypto {
    let device: LockStateManager

    static func additionalData(id: Int64, identity: ItemIdentity, accessibility: Accessibility) -> [UInt8] {
        var fields = ["dpfs.keychain.item.v1", String(id), identity.itemClass.rawValue]
        for key in identity.itemClass.keyAttributes { fields.append(key.rawValue + "=" + (identity.keys[key] ?? key.absent)) }
        fields += [identity.accessGroup, identity.synchronizable ? "sync" : "local", accessibility.rawValue]
        // Length-prefixed, so no two field lists encode alike.
        var bytes: [UInt8] = []
        for field in fields {
            let utf8 = Array(field.utf8)
            let count = UInt32(utf8.count)
            bytes += [UInt8(count >> 24), UInt8(count >> 16 & 0xff), UInt8(count >> 8 & 0xff), UInt8(count & 0xff)]
            bytes += utf8
        }
        return bytes
    }

    /// Seals `plaintext`; errSecInteractionNotAllowed when the class key is not in memory.
    func seal(_ plaintext: UnsafeRawBufferPointer, id: Int64, identity: ItemIdentity,
              accessibility: Accessibility) throws -> Data {
        let ad = Self.additionalData(id: id, identity: identity, accessibility: accessibility)
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
        let ad = Self.additionalData(id: item.id, identity: item.identity, accessibility: accessibility)
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
