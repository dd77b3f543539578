// Public-key wrapping for the completeUnlessOpen class: X25519 sealed boxes, so that a
// file key can be wrapped with the public key alone while the device is locked, and
// unwrapped only with the private key, which exists only while unlocked.
import CSodium

public enum SealedBox {
    public static let publicKeySize = Int(crypto_box_PUBLICKEYBYTES)
    public static let privateKeySize = Int(crypto_box_SECRETKEYBYTES)
    public static let overhead = Int(crypto_box_sealbytes())

    /// A new X25519 key pair; the private half in locked memory.
    public static func makeKeyPair() -> (publicKey: [UInt8], privateKey: SecureBuffer) {
        precondition(Sodium.ready)
        var publicKey = [UInt8](repeating: 0, count: publicKeySize)
        let privateKey = SecureBuffer(count: privateKeySize)
        _ = crypto_box_keypair(&publicKey, privateKey.mutableBytes.start)
        return (publicKey, privateKey)
    }

    /// Derives the public key from a private key (used to check a stored pair).
    public static func publicKey(of privateKey: SecureBuffer) -> [UInt8] {
        var publicKey = [UInt8](repeating: 0, count: publicKeySize)
        _ = crypto_scalarmult_base(&publicKey, privateKey.pointer)
        return publicKey
    }

    public static func seal(_ secret: SecureBuffer, to publicKey: [UInt8]) -> [UInt8] {
        var sealed = [UInt8](repeating: 0, count: secret.count + overhead)
        _ = crypto_box_seal(&sealed, secret.pointer, UInt64(secret.count), publicKey)
        return sealed
    }

    public static func open(_ sealed: [UInt8], publicKey: [UInt8], privateKey: SecureBuffer) -> SecureBuffer? {
        guard sealed.count > overhead else { return nil }
        let secret = SecureBuffer(count: sealed.count - overhead)
        let rc = crypto_box_seal_open(secret.mutableBytes.start,
                                      sealed, UInt64(sealed.count), publicKey, privateKey.pointer)
        return rc == 0 ? secret : nil
    }
}
