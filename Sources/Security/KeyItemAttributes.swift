// The attributes of key items (kSecClassKey) between Apple's names and values and the
// item store's: tags and labels are Data on Apple and hex in the store, kSecAttrKeyClass
// "1" is "private", kSecAttrKeyType "73" is "ec", the Secure Enclave token is
// "secureEnclave"; and the SecKey a find with kSecReturnRef hands back.
import DPFSProtocol
import Foundation
import SecKeyCrypto

enum KeyItemAttributes {
    /// Apple's key attributes that only say what every P-256 key here is: accepted, not stored.
    private static let implied: Set<String> = [kSecAttrIsPermanent, kSecAttrCanSign, kSecAttrCanVerify, kSecAttrCanEncrypt,
                                               kSecAttrCanDecrypt, kSecAttrCanDerive, kSecAttrCanWrap, kSecAttrCanUnwrap,
                                               kSecAttrIsExtractable, kSecAttrIsSensitive, kSecAttrEffectiveKeySize]
    private static let named: Set<String> = [kSecAttrKeyClass, kSecAttrApplicationTag, kSecAttrApplicationLabel,
                                             kSecAttrKeyType, kSecAttrKeySizeInBits, kSecAttrTokenID]

    static func handles(_ key: String) -> Bool { named.contains(key) || implied.contains(key) }

    static func parse(_ key: String, _ value: Any, into attributes: inout [String: String]) throws {
        switch key {
        case kSecAttrKeyClass:
            switch value as? String {
            case kSecAttrKeyClassPrivate?: attributes["keyClass"] = "private"
            case kSecAttrKeyClassPublic?: attributes["keyClass"] = "public"
            case kSecAttrKeyClassSymmetric?: attributes["keyClass"] = "symmetric"
            default: throw SecItemRefusal.param
            }
        case kSecAttrApplicationTag:
            guard let tag = KeyAttributeValue.bytes(value) else { throw SecItemRefusal.param }
            attributes["applicationTag"] = tag.hexString
        case kSecAttrApplicationLabel:
            guard let label = KeyAttributeValue.bytes(value) else { throw SecItemRefusal.param }
            attributes["applicationLabel"] = label.hexString
        case kSecAttrKeyType:
            switch value as? String {
            case kSecAttrKeyTypeECSECPrimeRandom?: attributes["keyType"] = "ec"
            case kSecAttrKeyTypeRSA?: attributes["keyType"] = "rsa"
            default: throw SecItemRefusal.param
            }
        case kSecAttrKeySizeInBits:
            guard let bits = (value as? Int) ?? (value as? String).flatMap({ Int($0) }) else { throw SecItemRefusal.param }
            attributes["keySizeInBits"] = String(bits)
        case kSecAttrTokenID:
            guard value as? String == kSecAttrTokenIDSecureEnclave else { throw SecItemRefusal.param }
            attributes["tokenID"] = "secureEnclave"
        default:
            break  // implied
        }
    }

    /// kSecValueRef in a query: the key item of the key, by its application label and
    /// class (a pair's public and private items share the label).
    static func identify(_ key: SecKey, in attributes: inout [String: String]) {
        attributes["class"] = kSecClassKey
        attributes["applicationLabel"] = KeyEncoding.applicationLabel(ofPublicKey: key.publicKeyData).hexString
        // A class the query gives itself is kept: a private key's ref with
        // kSecAttrKeyClassPublic finds nothing, as on iOS.
        if attributes["keyClass"] == nil { attributes["keyClass"] = key.isPrivate ? "private" : "public" }
    }

    /// kSecValueRef in SecItemAdd: an ordinary private key stored as a key item, its
    /// X9.63 private form the item's data, or a public key, its X9.63 form the data. A
    /// Secure Enclave key cannot be added this way here.
    static func forAdding(_ key: SecKey, _ attributes: inout [String: String]) throws -> Data {
        let data: Data
        switch key.material {
        case .software(let privateKey): data = KeyEncoding.x963(privateKey)
        case .publicKey: data = key.publicKeyData
        case .enclave: throw SecItemRefusal(status: errSecUnimplemented)
        }
        identify(key, in: &attributes)
        guard attributes["keyClass"] == (key.isPrivate ? "private" : "public") else { throw SecItemRefusal.param }
        attributes["keyType"] = "ec"
        attributes["keySizeInBits"] = "256"
        attributes["publicKey"] = key.publicKeyData.hexString
        return data
    }

    /// kSecValueData in SecItemAdd of a key item: a P-256 key's external representation,
    /// public (65 bytes) or private (97), whose public key the item records.
    static func forAdding(data: Data?, _ attributes: inout [String: String]) throws {
        guard let data else { throw SecItemRefusal.param }
        let publicKey: Data
        if let privateKey = try? KeyEncoding.privateKey(x963: data) {
            guard attributes["keyClass"] ?? "private" == "private" else { throw SecItemRefusal.param }
            publicKey = privateKey.publicKey.x963Representation
            attributes["keyClass"] = "private"
        } else if (try? KeyEncoding.publicKey(x963: data)) != nil {
            guard attributes["keyClass"] ?? "public" == "public" else { throw SecItemRefusal.param }
            publicKey = data
            attributes["keyClass"] = "public"
        } else {
            throw SecItemRefusal.param
        }
        guard attributes["keyType"] ?? "ec" == "ec", attributes["keySizeInBits"] ?? "256" == "256" else {
            throw SecItemRefusal.param
        }
        attributes["keyType"] = "ec"
        attributes["keySizeInBits"] = "256"
        attributes["publicKey"] = publicKey.hexString
        if attributes["applicationLabel"] == nil {
            attributes["applicationLabel"] = KeyEncoding.applicationLabel(ofPublicKey: publicKey).hexString
        }
    }

    /// The Apple name and value of a key item's stored attribute; nil for one that has none.
    static func apple(_ name: String, _ value: String) -> (String, Any)? {
        switch name {
        case "keyClass":
            return (kSecAttrKeyClass, value == "private" ? kSecAttrKeyClassPrivate
                                      : value == "public" ? kSecAttrKeyClassPublic : kSecAttrKeyClassSymmetric)
        case "applicationTag": return (kSecAttrApplicationTag, Data(hexString: value) ?? Data())
        case "applicationLabel": return (kSecAttrApplicationLabel, Data(hexString: value) ?? Data())
        case "keyType": return (kSecAttrKeyType, value == "ec" ? kSecAttrKeyTypeECSECPrimeRandom : kSecAttrKeyTypeRSA)
        case "keySizeInBits": return (kSecAttrKeySizeInBits, Int(value) ?? 0)
        case "tokenID": return value.isEmpty ? nil : (kSecAttrTokenID, kSecAttrTokenIDSecureEnclave)
        case "publicKey": return nil
        default: return nil
        }
    }

    static let storeNames: Set<String> = ["keyClass", "applicationTag", "applicationLabel", "keyType", "keySizeInBits",
                                          "tokenID", "publicKey"]

    /// The SecKey of a found key item: a Secure Enclave key's token, or an ordinary
    /// key's X9.63 private form, is its data. A Secure Enclave key keeps the query's
    /// `authentication` (kSecUseAuthenticationContext…) for its operations.
    static func key(from attributes: [String: String], data: Data?, authentication: CallAuthentication? = nil) -> SecKey? {
        guard attributes["class"] == kSecClassKey, let publicKey = attributes["publicKey"].flatMap(Data.init(hexString:)),
              let data else { return nil }
        let apple = SecItemResult.appleAttributes(attributes)
        if attributes["tokenID"] == "secureEnclave" {
            return SecKey(material: .enclave(token: data), publicKey: publicKey, attributes: apple,
                          authentication: authentication)
        }
        if attributes["keyClass"] == "public" { return SecKey(material: .publicKey, publicKey: publicKey, attributes: apple) }
        guard let privateKey = try? KeyEncoding.privateKey(x963: data) else { return nil }
        return SecKey(material: .software(privateKey), publicKey: publicKey, attributes: apple)
    }
}
