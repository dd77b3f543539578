// ECIES as Apple's Security framework does it for P-256 keys, byte for byte, so that a
// ciphertext made on an iPhone opens here and the other way round:
//   ephemeral public key (X9.63, 65 bytes) || AES-GCM ciphertext || 16-byte tag,
// the AES-128 key (and, for the VariableIV algorithms, a 16-byte IV; else sixteen
// zero bytes) from the ANSI X9.63 KDF, with the hash the algorithm names, over the
// ECDH shared secret, with the ephemeral public key as shared info. No additional data.
import Crypto
import Foundation

public enum ECIES {
    static let publicKeySize = 65
    static let aesKeySize = 16
    static let ivSize = 16
    static let tagSize = 16

    public static func encrypt(_ plaintext: Data, to recipient: P256.KeyAgreement.PublicKey,
                               algorithm: KeyAlgorithm) throws -> Data {
        let ephemeral = P256.KeyAgreement.PrivateKey()
        let ephemeralPublic = ephemeral.publicKey.x963Representation
        let secret = try ephemeral.sharedSecretFromKeyAgreement(with: recipient)
        let (key, nonce) = try derive(secret, ephemeralPublic: ephemeralPublic, algorithm: algorithm)
        let sealed = try AES.GCM.seal(plaintext, using: key, nonce: nonce)
        return ephemeralPublic + sealed.ciphertext + sealed.tag
    }

    /// The plaintext, or KeyCryptoError.decode when the ciphertext is malformed or fails its tag.
    public static func decrypt(_ ciphertext: Data, with recipient: P256.KeyAgreement.PrivateKey,
                               algorithm: KeyAlgorithm) throws -> Data {
        guard ciphertext.count >= publicKeySize + tagSize else { throw KeyCryptoError.decode }
        let bytes = Data(ciphertext)
        let ephemeralPublic = bytes.prefix(publicKeySize)
        guard let ephemeral = try? P256.KeyAgreement.PublicKey(x963Representation: ephemeralPublic) else {
            throw KeyCryptoError.decode
        }
        let secret = try recipient.sharedSecretFromKeyAgreement(with: ephemeral)
        let (key, nonce) = try derive(secret, ephemeralPublic: Data(ephemeralPublic), algorithm: algorithm)
        let body = bytes.dropFirst(publicKeySize)
        do {
            let box = try AES.GCM.SealedBox(nonce: nonce, ciphertext: body.dropLast(tagSize), tag: body.suffix(tagSize))
            return try AES.GCM.open(box, using: key)
        } catch {
            throw KeyCryptoError.decode
        }
    }

    /// The secret stays in swift-crypto's own memory (SharedSecret, SymmetricKey).
    private static func derive(_ secret: SharedSecret, ephemeralPublic: Data,
                               algorithm: KeyAlgorithm) throws -> (SymmetricKey, AES.GCM.Nonce) {
        guard algorithm.kind == .encryption, let hash = algorithm.hash else { throw KeyCryptoError.param }
        let count = aesKeySize + ivSize
        let derived: SymmetricKey
        switch hash {
        case .sha1: derived = secret.x963DerivedSymmetricKey(using: Insecure.SHA1.self, sharedInfo: ephemeralPublic,
                                                             outputByteCount: count)
        case .sha224: throw KeyCryptoError.unavailable
        case .sha256: derived = secret.x963DerivedSymmetricKey(using: SHA256.self, sharedInfo: ephemeralPublic,
                                                               outputByteCount: count)
        case .sha384: derived = secret.x963DerivedSymmetricKey(using: SHA384.self, sharedInfo: ephemeralPublic,
                                                               outputByteCount: count)
        case .sha512: derived = secret.x963DerivedSymmetricKey(using: SHA512.self, sharedInfo: ephemeralPublic,
                                                               outputByteCount: count)
        }
        return try derived.withUnsafeBytes { bytes in
            let key = SymmetricKey(data: bytes.prefix(aesKeySize))
            let iv = algorithm.variableIV ? Data(bytes[aesKeySize..<(aesKeySize + ivSize)]) : Data(count: ivSize)
            return (key, try AES.GCM.Nonce(data: iv))
        }
    }
}

public enum KeyCryptoError: Error, Sendable {
    /// Malformed input, a ciphertext that fails its tag, a key that does not parse.
    case decode
    /// An algorithm this key does not do, or input of the wrong size for it.
    case param
    /// An algorithm that needs a hash swift-crypto lacks (SHA-224).
    case unavailable
}
