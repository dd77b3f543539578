// A key item received from keychain sync gets its public key from its own data, as
// every key item must have one for a find to make its SecKey. The data is what the
// SecKey is made of, so the two always agree, whatever the record's attributes say.
import DataProtection
import DPFSProtocol
import Foundation
import SecKeyCrypto

enum ReceivedKeyPublicKey {
    /// The public key (X9.63, hex) at the head of a P-256 key's external
    /// representation: 04 || X || Y of a private key's 04 || X || Y || D, or a public
    /// key's whole. nil for data that is neither; the record's own attribute stands then.
    static func of(_ secret: SecureBuffer, keyClass: String?) -> String? {
        let bytes = secret.bytes
        let expected = keyClass == "public" ? KeyEncoding.publicKeySize : KeyEncoding.privateKeySize
        guard bytes.count == expected else { return nil }
        let publicKey = Data(bytes.prefix(KeyEncoding.publicKeySize))
        guard (try? KeyEncoding.publicKey(x963: publicKey)) != nil else { return nil }
        return publicKey.hexString
    }
}
