// The account's cryptography (docs/security.md "Keychain sync"). Every record on the
// server is XChaCha20-Poly1305 under the account key of its epoch, the associated
// data binding the account id, the record id and the epoch, so a row moved to another
// record or account, or relabelled with another epoch, fails to open. Record ids are
// BLAKE2b-128 of the item's identity under the account's id key: the same item on two
// devices is one record, and the server learns nothing of what it names. A member is
// endorsed by a MAC under the current account key over its device id and X25519
// public key, so the server alone can add no member that a rotation would wrap to.
import DPFSProtocol
import DataProtection
import Foundation

struct AccountCrypto {
    let accountID: String
    let epoch: Int
    /// The epoch's account key: seals records, endorses members.
    let key: SecureBuffer
    /// Fixed for the account's life: turns identities into record ids.
    let idKey: SecureBuffer

    func recordID(of identity: [UInt8]) -> String {
        var digest = [UInt8](repeating: 0, count: 16)
        identity.withUnsafeBytes { input in
            digest.withUnsafeMutableBytes { Sodium.hash(input, key: idKey.bytes, into: $0) }
        }
        return Hex.encode(digest)
    }

    static func recordAD(accountID: String, recordID: String, epoch: Int) -> [UInt8] {
        LengthPrefixed.encode(["dpfs.sync.record.v1", accountID, recordID, String(epoch)])
    }

    func seal(_ plaintext: SecureBuffer, recordID: String) -> [UInt8] {
        AEAD.seal(plaintext, additionalData: Self.recordAD(accountID: accountID, recordID: recordID, epoch: epoch), key: key)
    }

    func open(_ sealed: [UInt8], recordID: String, epoch: Int) -> SecureBuffer? {
        guard epoch == self.epoch else { return nil }
        return AEAD.open(sealed, additionalData: Self.recordAD(accountID: accountID, recordID: recordID, epoch: epoch), key: key)
    }

    /// BLAKE2b-256 under the account key of the member's identity and public key.
    func endorsement(deviceID: String, publicKey: [UInt8]) -> [UInt8] {
        let message = LengthPrefixed.encode(["dpfs.sync.member.v1", accountID, deviceID, Hex.encode(publicKey), String(epoch)])
        var mac = [UInt8](repeating: 0, count: 32)
        message.withUnsafeBytes { input in mac.withUnsafeMutableBytes { Sodium.hash(input, key: key.bytes, into: $0) } }
        return mac
    }

    func endorses(deviceID: String, publicKey: [UInt8], endorsement: [UInt8]) -> Bool {
        let expected = self.endorsement(deviceID: deviceID, publicKey: publicKey)
        return expected.withUnsafeBytes { a in endorsement.withUnsafeBytes { b in Sodium.equal(a, b) } }
    }

    /// The account key and the id key, one after the other, for wrapping to a member.
    func keyPair() -> SecureBuffer {
        let both = SecureBuffer(count: 2 * AEAD.keySize)
        both.mutableBytes.baseAddress?.copyMemory(from: key.pointer, byteCount: AEAD.keySize)
        (both.mutableBytes.baseAddress.map { $0 + AEAD.keySize })?.copyMemory(from: idKey.pointer, byteCount: AEAD.keySize)
        return both
    }

    /// The inverse of `keyPair`.
    init?(accountID: String, epoch: Int, keyPair: SecureBuffer) {
        guard keyPair.count == 2 * AEAD.keySize else { return nil }
        let key = SecureBuffer(count: AEAD.keySize), idKey = SecureBuffer(count: AEAD.keySize)
        key.mutableBytes.copyMemory(from: UnsafeRawBufferPointer(rebasing: keyPair.bytes[0..<AEAD.keySize]))
        idKey.mutableBytes.copyMemory(from: UnsafeRawBufferPointer(rebasing: keyPair.bytes[AEAD.keySize...]))
        self.init(accountID: accountID, epoch: epoch, key: key, idKey: idKey)
    }

    init(accountID: String, epoch: Int, key: SecureBuffer, idKey: SecureBuffer) {
        self.accountID = accountID; self.epoch = epoch; self.key = key; self.idKey = idKey
    }

    /// The same account at the next epoch, under a fresh random key.
    func rotated() -> AccountCrypto {
        AccountCrypto(accountID: accountID, epoch: epoch + 1, key: SecureBuffer.random(count: AEAD.keySize), idKey: idKey)
    }
}
