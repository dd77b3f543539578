// The external representations of P-256 keys that Apple's SecKeyCopyExternalRepresentation
// gives and SecKeyCreateWithData takes: a public key as X9.63 uncompressed
// (04 || X || Y, 65 bytes), a private key as 04 || X || Y || D (97 bytes); and the
// application label Apple gives an EC key, the SHA-1 of its public key.
import Crypto
import Foundation

public enum KeyEncoding {
    public static let publicKeySize = 65
    public static let privateKeySize = 97

    /// The private key of an X9.63 private representation, checked against the public
    /// key it carries.
    public static func privateKey(x963 data: Data) throws -> P256.Signing.PrivateKey {
        guard data.count == privateKeySize, data.first == 4 else { throw KeyCryptoError.decode }
        let bytes = Data(data)
        guard let key = try? P256.Signing.PrivateKey(rawRepresentation: bytes.suffix(32)),
              key.publicKey.x963Representation == bytes.prefix(publicKeySize) else { throw KeyCryptoError.decode }
        return key
    }

    public static func publicKey(x963 data: Data) throws -> P256.Signing.PublicKey {
        guard data.count == publicKeySize, data.first == 4,
              let key = try? P256.Signing.PublicKey(x963Representation: data) else { throw KeyCryptoError.decode }
        return key
    }

    public static func x963(_ key: P256.Signing.PrivateKey) -> Data {
        key.publicKey.x963Representation + key.rawRepresentation
    }

    public static func applicationLabel(ofPublicKey x963: Data) -> Data {
        Data(Insecure.SHA1.hash(data: x963))
    }
}
