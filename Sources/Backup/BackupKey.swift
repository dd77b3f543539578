// The backup key: Argon2id (libsodium crypto_pwhash) of the backup password with the
// header's salt and cost, in locked memory. Unlike the passcode key it is not
// entangled with a device secret: a backup must open on a new device.
import CSodium
import DataProtection
import DPFSProtocol

enum BackupKey {
    static let size = Int(crypto_secretstream_xchacha20poly1305_KEYBYTES)

    static func derive(password: some SecretBytes, header: BackupHeader) throws -> SecureBuffer {
        let key = SecureBuffer(count: size)
        let rc = header.salt.withUnsafeBytes { salt in
            crypto_pwhash(key.mutableBytes.start, UInt64(size),
                          UnsafeRawPointer(password.bytes.start).assumingMemoryBound(to: CChar.self),
                          UInt64(password.bytes.count), salt.start,
                          header.opsLimit, Int(header.memLimit), crypto_pwhash_ALG_ARGON2ID13)
        }
        guard rc == 0 else { throw BackupError.outOfMemory }
        return key
    }

    /// The header's key check: BLAKE2b-128 of "dpfs.backup.key-check.v1" keyed with the key.
    static func check(_ key: SecureBuffer) -> [UInt8] {
        var digest = [UInt8](repeating: 0, count: BackupHeader.keyCheckSize)
        Array("dpfs.backup.key-check.v1".utf8).withUnsafeBytes { message in
            digest.withUnsafeMutableBytes { Sodium.hash(message, key: key.bytes, into: $0) }
        }
        return digest
    }
}
