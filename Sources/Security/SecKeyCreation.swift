// SecKeyCreateRandomKey, SecKeyCreateWithData, SecKeyCopyPublicKey,
// SecKeyCopyExternalRepresentation and SecKeyCopyAttributes with Apple's signatures.
// A Secure Enclave key is made by the device's daemon and never leaves it; an ordinary
// key is made here, as iOS makes it in the app's process, and a permanent one is then
// stored as a key item by the add SecItemAdd makes (PermanentKeyItem): the daemon
// sees its private form only as an item's data, as it sees a password's.
import Crypto
import DPFSProtocol
import Foundation
import SecKeyCrypto

/// A new P-256 key pair (kSecAttrKeyTypeECSECPrimeRandom or EC, 256 bits). Each half
/// is stored as a key item when its attributes (kSecPrivateKeyAttrs or
/// kSecPublicKeyAttrs, over the top level's) ask kSecAttrIsPermanent, the public half
/// first, as Apple's SecKeyGeneratePair stores them.
public func SecKeyCreateRandomKey(_ parameters: CFDictionary, _ error: UnsafeMutablePointer<Unmanaged<CFError>?>?) -> SecKey? {
    do {
        let spec = try KeySpec(parameters)
        // Read only when stored: Apple never reads a transient public half's attributes.
        let publicSpec = KeySpec.isPermanent(parameters, half: .publicKey) ? try KeySpec(parameters, half: .publicKey) : nil
        guard spec.inEnclave else {
            let key = P256.Signing.PrivateKey()
            let made = SecKey(material: .software(key), publicKey: key.publicKey.x963Representation,
                              attributes: spec.appleAttributes)
            try storePublicHalf(of: made, publicSpec)
            guard spec.permanent else { return made }
            var attributes = spec.appleAttributes
            attributes.merge(SecItemResult.appleAttributes(try PermanentKeyItem.add(made, spec))) { $1 }
            return SecKey(material: .software(key), publicKey: made.publicKeyData, attributes: attributes)
        }
        let request = KeyRequest(operation: .generate, attributes: spec.storeAttributes, permanent: spec.permanent)
        let response = try SecKeyCall.answer(DeviceConnection.shared.send(request))
        guard response.status == errSecSuccess, let publicKey = response.publicKey, let token = response.token else {
            throw SecKeyFailure(response.status == errSecSuccess ? errSecDecode : response.status,
                                response.message ?? "the device could not make the key")
        }
        var attributes = spec.appleAttributes
        if let stored = response.attributes { attributes.merge(SecItemResult.appleAttributes(stored)) { $1 } }
        let made = SecKey(material: .enclave(token: token), publicKey: publicKey, attributes: attributes,
                          authentication: spec.authentication)
        // The daemon stored the private key as it made it: a refused public half fails
        // the call and leaves that key stored.
        try storePublicHalf(of: made, publicSpec)
        return made
    } catch let failure as SecKeyFailure {
        report(failure.status, failure.message, to: error)
        return nil
    } catch let other {
        report(errSecParam, "\(other)", to: error)
        return nil
    }
}

/// The public half of a new pair as a key item of its own, when its spec is permanent.
private func storePublicHalf(of key: SecKey, _ spec: KeySpec?) throws {
    guard let spec, spec.permanent, let publicKey = SecKeyCopyPublicKey(key) else { return }
    _ = try PermanentKeyItem.add(publicKey, spec)
}

/// A key from its external representation: X9.63 public (65 bytes) or private
/// (97 bytes, 04 || X || Y || D), as kSecAttrKeyClass says.
public func SecKeyCreateWithData(_ keyData: CFData, _ attributes: CFDictionary,
                                 _ error: UnsafeMutablePointer<Unmanaged<CFError>?>?) -> SecKey? {
    guard let type = attributes[kSecAttrKeyType] as? String, type == kSecAttrKeyTypeECSECPrimeRandom else {
        report(errSecParam, "only EC (P-256) keys are supported", to: error)
        return nil
    }
    switch attributes[kSecAttrKeyClass] as? String {
    case kSecAttrKeyClassPublic?:
        guard (try? KeyEncoding.publicKey(x963: keyData)) != nil else {
            report(errSecParam, "not a P-256 public key in X9.63 form", to: error)
            return nil
        }
        return SecKey(material: .publicKey, publicKey: Data(keyData), attributes: [:])
    case kSecAttrKeyClassPrivate?:
        guard let key = try? KeyEncoding.privateKey(x963: keyData) else {
            report(errSecParam, "not a P-256 private key in X9.63 form (04 || X || Y || D)", to: error)
            return nil
        }
        return SecKey(material: .software(key), publicKey: key.publicKey.x963Representation, attributes: [:])
    default:
        report(errSecParam, "kSecAttrKeyClass must be public or private", to: error)
        return nil
    }
}

public func SecKeyCopyPublicKey(_ key: SecKey) -> SecKey? {
    SecKey(material: .publicKey, publicKey: key.publicKeyData, attributes: [:])
}

/// X9.63 for a public key, 04 || X || Y || D for an ordinary private key. A Secure
/// Enclave key's private key cannot be exported: that fails, as on iOS.
public func SecKeyCopyExternalRepresentation(_ key: SecKey, _ error: UnsafeMutablePointer<Unmanaged<CFError>?>?) -> CFData? {
    switch key.material {
    case .publicKey: return key.publicKeyData
    case .software(let privateKey): return KeyEncoding.x963(privateKey)
    case .enclave:
        report(errSecUnimplemented, "a Secure Enclave key's private key cannot be exported", to: error)
        return nil
    }
}

public func SecKeyCopyAttributes(_ key: SecKey) -> CFDictionary? {
    var attributes = key.attributes
    if !key.isPrivate { attributes[kSecValueData] = key.publicKeyData }
    return attributes
}

/// The block size in bytes (the key size), as Apple answers for EC keys.
public func SecKeyGetBlockSize(_ key: SecKey) -> Int { 32 }

struct SecKeyFailure: Error {
    let status: OSStatus
    let message: String
    init(_ status: OSStatus, _ message: String) { self.status = status; self.message = message }
}

/// Which half of a pair a KeySpec describes: its own attributes override the top
/// level's, as Apple merges them.
enum KeyHalf {
    case privateKey, publicKey

    var attributesKey: String { self == .privateKey ? kSecPrivateKeyAttrs : kSecPublicKeyAttrs }
}

/// SecKeyCreateRandomKey's parameters read for one half of the pair: what its key
/// item's store attributes are (or the daemon is asked, for a Secure Enclave key), and
/// what the SecKey reports.
struct KeySpec {
    var permanent = false
    var inEnclave = false
    var storeAttributes: [String: String] = [:]
    var appleAttributes: [String: Any] = [:]
    /// kSecUseAuthenticationContext and friends, which the new key carries (SecKey.authentication).
    var authentication: CallAuthentication?

    /// Whether the half's kSecAttrIsPermanent, or else the top level's, is true.
    static func isPermanent(_ parameters: [String: Any], half: KeyHalf) -> Bool {
        let own = (parameters[half.attributesKey] as? [String: Any])?[kSecAttrIsPermanent]
        return (own ?? parameters[kSecAttrIsPermanent]) as? Bool == true
    }

    init(_ parameters: [String: Any], half: KeyHalf = .privateKey) throws {
        let type = parameters[kSecAttrKeyType] as? String
        guard type == kSecAttrKeyTypeECSECPrimeRandom else {
            throw SecKeyFailure(type == kSecAttrKeyTypeRSA ? errSecUnimplemented : errSecParam,
                                "only EC keys (kSecAttrKeyTypeECSECPrimeRandom) of 256 bits are supported")
        }
        let size = (parameters[kSecAttrKeySizeInBits] as? Int) ?? (parameters[kSecAttrKeySizeInBits] as? String).flatMap { Int($0) }
        guard size == 256 else { throw SecKeyFailure(errSecParam, "only 256-bit (P-256) EC keys are supported") }
        if let token = parameters[kSecAttrTokenID] {
            guard token as? String == kSecAttrTokenIDSecureEnclave else { throw SecKeyFailure(errSecParam, "unknown kSecAttrTokenID") }
            inEnclave = true
            // A Secure Enclave key's public half is an ordinary public key.
            if half == .privateKey { storeAttributes["tokenID"] = "secureEnclave" }
        }
        var accessible: String?
        var accessControl: (AccessControlProtection, Any)?
        var synchronizable = false
        // The half's attributes override the top level, as on Apple; the loop below
        // only collects, so the order it visits the merged dictionary in decides nothing.
        var merged = parameters
        if let halfAttributes = parameters[half.attributesKey] {
            guard let dictionary = halfAttributes as? [String: Any] else {
                throw SecKeyFailure(errSecParam, "\(half == .privateKey ? "kSecPrivateKeyAttrs" : "kSecPublicKeyAttrs") is not a dictionary")
            }
            merged.merge(dictionary) { $1 }
        }
        for (name, value) in merged {
            switch name {
            case kSecAttrIsPermanent:
                guard let flag = value as? Bool else { throw SecKeyFailure(errSecParam, "kSecAttrIsPermanent is not a boolean") }
                permanent = flag
            case kSecAttrApplicationTag:
                guard let tag = KeyAttributeValue.bytes(value) else { throw SecKeyFailure(errSecParam, "kSecAttrApplicationTag is not data") }
                storeAttributes["applicationTag"] = tag.hexString
                appleAttributes[kSecAttrApplicationTag] = tag
            case kSecAttrLabel:
                guard let label = value as? String else { throw SecKeyFailure(errSecParam, "kSecAttrLabel is not a string") }
                storeAttributes["label"] = label
                appleAttributes[kSecAttrLabel] = label
            case kSecAttrAccessible:
                guard let code = value as? String, SecItemQuery.accessibility[code] != nil else {
                    throw SecKeyFailure(errSecParam, "kSecAttrAccessible has no such value")
                }
                accessible = code
            case kSecAttrAccessGroup:
                guard let group = value as? String else { throw SecKeyFailure(errSecParam, "kSecAttrAccessGroup is not a string") }
                storeAttributes["accessGroup"] = group
            case KeyAttributeValue.accessControlKey:
                // SecAccessControl (kSecAttrAccessControl): its protection is the key's
                // accessibility, its flags are sealed with the key by the daemon, which
                // asks the simulated user at each private-key use of a Secure Enclave key.
                guard let access = value as? AccessControlProtection, let protection = access.protectionAccessible,
                      SecItemQuery.accessibility[protection] != nil else {
                    throw SecKeyFailure(errSecParam, "kSecAttrAccessControl is not a SecAccessControl")
                }
                accessControl = (access, value)
            case kSecAttrSynchronizable:
                guard let flag = value as? Bool else { throw SecKeyFailure(errSecParam, "kSecAttrSynchronizable is not a boolean") }
                synchronizable = flag
            case _ where AuthenticationOption.handles(name):
                var call = authentication ?? CallAuthentication()
                guard AuthenticationOption.apply(name, value, to: &call) else {
                    throw SecKeyFailure(errSecParam, "\(name) has a value of the wrong kind")
                }
                authentication = call
            case kSecAttrKeyType, kSecAttrKeySizeInBits, kSecAttrTokenID, kSecPrivateKeyAttrs, kSecPublicKeyAttrs,
                 kSecAttrCanSign, kSecAttrCanVerify, kSecAttrCanEncrypt, kSecAttrCanDecrypt, kSecAttrCanDerive,
                 kSecAttrIsExtractable, kSecAttrIsSensitive, kSecAttrEffectiveKeySize, kSecUseDataProtectionKeychain:
                break  // the key's own, or said for every P-256 key alike
            default:
                throw SecKeyFailure(errSecParam, "\(name) is not a key attribute")
            }
        }
        try protect(accessible: accessible, accessControl: accessControl)
        // The daemon refuses a synchronizable Secure Enclave key, and the store a key item
        // with an access control (errSecParam), as SecItemAdd refuses the item.
        if synchronizable {
            storeAttributes["synchronizable"] = "yes"
        }
    }

    /// The key's accessibility, from kSecAttrAccessible or its access control's
    /// protection. Both may be given only when they agree: Apple's securityd refuses
    /// "conflicting kSecAccess and kSecAccessControl attributes" with errSecParam.
    private mutating func protect(accessible: String?, accessControl: (AccessControlProtection, Any)?) throws {
        if let (access, value) = accessControl, let protection = access.protectionAccessible {
            if let accessible, accessible != protection {
                throw SecKeyFailure(errSecParam, "kSecAttrAccessible and kSecAttrAccessControl's protection differ")
            }
            storeAttributes["accessible"] = SecItemQuery.accessibility[protection]
            storeAttributes["accessControl"] = String(access.accessControlFlags)
            appleAttributes[kSecAttrAccessible] = protection
            appleAttributes[KeyAttributeValue.accessControlKey] = value
        } else if let accessible {
            storeAttributes["accessible"] = SecItemQuery.accessibility[accessible]
            appleAttributes[kSecAttrAccessible] = accessible
        }
    }
}

/// What SecAccessControl offers a key: the kSecAttrAccessible value it was made with,
/// and its flags. The seam between this file and SecAccessControl, which conforms
/// where it is defined.
protocol AccessControlProtection {
    var protectionAccessible: String? { get }
    var accessControlFlags: UInt { get }
}

enum KeyAttributeValue {
    /// kSecAttrAccessControl's string, named here so as not to define the constant twice.
    static let accessControlKey = "accc"

    /// kSecAttrApplicationTag and kSecAttrApplicationLabel are Data; a String is taken as its UTF-8.
    static func bytes(_ value: Any) -> Data? {
        if let data = value as? Data { return data }
        if let string = value as? String { return Data(string.utf8) }
        return nil
    }
}
