// SecKey: a P-256 key, public or private. An ordinary private key lives in the app, as
// on iOS; a Secure Enclave key is a token only the device's daemon can use (the
// private key never leaves it), so its private-key operations are requests to it.
// Immutable once made, so a SecKey may be shared between threads.
import Crypto
import DPFSProtocol
import Foundation
import SecKeyCrypto

public final class SecKey: @unchecked Sendable {
    enum Material {
        case publicKey
        case software(P256.Signing.PrivateKey)
        /// The daemon's token (dpfs(5) "Secure Enclave keys").
        case enclave(token: Data)
    }

    let material: Material
    /// X9.63 uncompressed, 65 bytes.
    let publicKeyData: Data
    /// Attributes in Apple's names, as SecKeyCopyAttributes returns them.
    let attributes: [String: Any]
    /// kSecUseAuthenticationContext (and kSecUseAuthenticationUI, kSecUseOperationPrompt)
    /// of the query that found the key or the parameters that made it: a Secure
    /// Enclave key behind an access control sends it with each private-key operation,
    /// so an evaluated LAContext spares the user the prompt, as on iOS (and one that
    /// forbids interaction, as it does at the operation, fails rather than asks).
    let authentication: CallAuthentication?

    init(material: Material, publicKey: Data, attributes: [String: Any], authentication: CallAuthentication? = nil) {
        self.material = material
        self.publicKeyData = publicKey
        self.authentication = authentication
        var attributes = attributes
        attributes[kSecClass] = kSecClassKey
        attributes[kSecAttrKeyType] = kSecAttrKeyTypeECSECPrimeRandom
        attributes[kSecAttrKeySizeInBits] = 256
        attributes[kSecAttrEffectiveKeySize] = 256
        attributes[kSecAttrApplicationLabel] = KeyEncoding.applicationLabel(ofPublicKey: publicKey)
        let isPrivate: Bool
        if case .publicKey = material { isPrivate = false } else { isPrivate = true }
        attributes[kSecAttrKeyClass] = isPrivate ? kSecAttrKeyClassPrivate : kSecAttrKeyClassPublic
        attributes[kSecAttrCanSign] = isPrivate
        attributes[kSecAttrCanDecrypt] = isPrivate
        attributes[kSecAttrCanDerive] = isPrivate
        attributes[kSecAttrCanVerify] = !isPrivate
        attributes[kSecAttrCanEncrypt] = !isPrivate
        if case .enclave = material {
            attributes[kSecAttrTokenID] = kSecAttrTokenIDSecureEnclave
            attributes[kSecAttrIsExtractable] = false
            attributes[kSecAttrIsSensitive] = true
        }
        self.attributes = attributes
    }

    var isPrivate: Bool {
        if case .publicKey = material { return false }
        return true
    }

    var signingPublicKey: P256.Signing.PublicKey? { try? KeyEncoding.publicKey(x963: publicKeyData) }
}

public typealias SecKeyRef = SecKey
