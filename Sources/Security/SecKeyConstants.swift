// The kSec names of keys and their attributes, with the strings Apple's Security
// framework gives them (SecItemConstants.c), and the algorithm names of SecKey.h.
import SecKeyCrypto

public let kSecAttrKeyClass: CFString = "kcls"
public let kSecAttrKeyClassPublic: CFString = "0"
public let kSecAttrKeyClassPrivate: CFString = "1"
public let kSecAttrKeyClassSymmetric: CFString = "2"
public let kSecAttrApplicationLabel: CFString = "klbl"
public let kSecAttrApplicationTag: CFString = "atag"
public let kSecAttrKeyType: CFString = "type"
public let kSecAttrKeyTypeEC: CFString = "73"
public let kSecAttrKeyTypeECSECPrimeRandom: CFString = "73"
/// RSA keys are named so code compiles; SecKeyCreateRandomKey answers errSecUnimplemented for them.
public let kSecAttrKeyTypeRSA: CFString = "42"
public let kSecAttrKeySizeInBits: CFString = "bsiz"
public let kSecAttrEffectiveKeySize: CFString = "esiz"
public let kSecAttrTokenID: CFString = "tkid"
public let kSecAttrTokenIDSecureEnclave: CFString = "com.apple.setoken"
public let kSecAttrIsPermanent: CFString = "perm"
public let kSecAttrIsSensitive: CFString = "sens"
public let kSecAttrIsExtractable: CFString = "extr"
public let kSecAttrCanEncrypt: CFString = "encr"
public let kSecAttrCanDecrypt: CFString = "decr"
public let kSecAttrCanDerive: CFString = "drve"
public let kSecAttrCanSign: CFString = "sign"
public let kSecAttrCanVerify: CFString = "vrfy"
public let kSecAttrCanWrap: CFString = "wrap"
public let kSecAttrCanUnwrap: CFString = "unwp"
public let kSecPrivateKeyAttrs: CFString = "private"
public let kSecPublicKeyAttrs: CFString = "public"

/// Apple's algorithm names; `rawValue` is its CFString.
public struct SecKeyAlgorithm: RawRepresentable, Hashable, Sendable {
    public let rawValue: CFString
    public init(rawValue: CFString) { self.rawValue = rawValue }

    public static let ecdsaSignatureMessageX962SHA256 = SecKeyAlgorithm(KeyAlgorithm.ecdsaSignatureMessageX962SHA256)
    public static let ecdsaSignatureDigestX962SHA256 = SecKeyAlgorithm(KeyAlgorithm.ecdsaSignatureDigestX962SHA256)
    public static let ecdsaSignatureDigestX962 = SecKeyAlgorithm(KeyAlgorithm.ecdsaSignatureDigestX962)
    public static let eciesEncryptionStandardX963SHA256AESGCM = SecKeyAlgorithm(KeyAlgorithm.eciesEncryptionStandardX963SHA256AESGCM)
    public static let eciesEncryptionCofactorX963SHA256AESGCM = SecKeyAlgorithm(KeyAlgorithm.eciesEncryptionCofactorX963SHA256AESGCM)
    public static let eciesEncryptionStandardVariableIVX963SHA256AESGCM =
        SecKeyAlgorithm(KeyAlgorithm.eciesEncryptionStandardVariableIVX963SHA256AESGCM)
    public static let eciesEncryptionCofactorVariableIVX963SHA256AESGCM =
        SecKeyAlgorithm(KeyAlgorithm.eciesEncryptionCofactorVariableIVX963SHA256AESGCM)
    public static let ecdhKeyExchangeStandard = SecKeyAlgorithm(KeyAlgorithm.ecdhKeyExchangeStandard)
    public static let ecdhKeyExchangeCofactor = SecKeyAlgorithm(KeyAlgorithm.ecdhKeyExchangeCofactor)

    private init(_ known: KeyAlgorithm) { rawValue = known.rawValue }
    var known: KeyAlgorithm? { KeyAlgorithm(rawValue: rawValue) }
}

public let kSecKeyAlgorithmECDSASignatureMessageX962SHA256 = SecKeyAlgorithm.ecdsaSignatureMessageX962SHA256
public let kSecKeyAlgorithmECDSASignatureDigestX962SHA256 = SecKeyAlgorithm.ecdsaSignatureDigestX962SHA256
public let kSecKeyAlgorithmECDSASignatureDigestX962 = SecKeyAlgorithm.ecdsaSignatureDigestX962
public let kSecKeyAlgorithmECIESEncryptionStandardX963SHA256AESGCM = SecKeyAlgorithm.eciesEncryptionStandardX963SHA256AESGCM
public let kSecKeyAlgorithmECIESEncryptionCofactorX963SHA256AESGCM = SecKeyAlgorithm.eciesEncryptionCofactorX963SHA256AESGCM
public let kSecKeyAlgorithmECIESEncryptionStandardVariableIVX963SHA256AESGCM =
    SecKeyAlgorithm.eciesEncryptionStandardVariableIVX963SHA256AESGCM
public let kSecKeyAlgorithmECIESEncryptionCofactorVariableIVX963SHA256AESGCM =
    SecKeyAlgorithm.eciesEncryptionCofactorVariableIVX963SHA256AESGCM
public let kSecKeyAlgorithmECDHKeyExchangeStandard = SecKeyAlgorithm.ecdhKeyExchangeStandard
public let kSecKeyAlgorithmECDHKeyExchangeCofactor = SecKeyAlgorithm.ecdhKeyExchangeCofactor

public enum SecKeyOperationType: Int, Sendable {
    case sign = 0, verify = 1, encrypt = 2, decrypt = 3, keyExchange = 4
}
