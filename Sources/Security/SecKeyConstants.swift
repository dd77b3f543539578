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

/// Apple's algorithm names, every one SecKey.h declares; `rawValue` is its CFString.
/// The elliptic-curve ones are SecKeyCrypto's KeyAlgorithm; RSA's are names only.
public struct SecKeyAlgorithm: RawRepresentable, Hashable, Sendable {
    public let rawValue: CFString
    public init(rawValue: CFString) { self.rawValue = rawValue }

    public static let ecdsaSignatureDigestX962 = SecKeyAlgorithm(KeyAlgorithm.ecdsaSignatureDigestX962)
    public static let ecdsaSignatureDigestX962SHA1 = SecKeyAlgorithm(KeyAlgorithm.ecdsaSignatureDigestX962SHA1)
    public static let ecdsaSignatureDigestX962SHA224 = SecKeyAlgorithm(KeyAlgorithm.ecdsaSignatureDigestX962SHA224)
    public static let ecdsaSignatureDigestX962SHA256 = SecKeyAlgorithm(KeyAlgorithm.ecdsaSignatureDigestX962SHA256)
    public static let ecdsaSignatureDigestX962SHA384 = SecKeyAlgorithm(KeyAlgorithm.ecdsaSignatureDigestX962SHA384)
    public static let ecdsaSignatureDigestX962SHA512 = SecKeyAlgorithm(KeyAlgorithm.ecdsaSignatureDigestX962SHA512)
    public static let ecdsaSignatureMessageX962SHA1 = SecKeyAlgorithm(KeyAlgorithm.ecdsaSignatureMessageX962SHA1)
    public static let ecdsaSignatureMessageX962SHA224 = SecKeyAlgorithm(KeyAlgorithm.ecdsaSignatureMessageX962SHA224)
    public static let ecdsaSignatureMessageX962SHA256 = SecKeyAlgorithm(KeyAlgorithm.ecdsaSignatureMessageX962SHA256)
    public static let ecdsaSignatureMessageX962SHA384 = SecKeyAlgorithm(KeyAlgorithm.ecdsaSignatureMessageX962SHA384)
    public static let ecdsaSignatureMessageX962SHA512 = SecKeyAlgorithm(KeyAlgorithm.ecdsaSignatureMessageX962SHA512)
    public static let ecdsaSignatureRFC4754 = SecKeyAlgorithm(KeyAlgorithm.ecdsaSignatureRFC4754)
    public static let ecdsaSignatureDigestRFC4754 = SecKeyAlgorithm(KeyAlgorithm.ecdsaSignatureDigestRFC4754)
    public static let ecdsaSignatureDigestRFC4754SHA1 = SecKeyAlgorithm(KeyAlgorithm.ecdsaSignatureDigestRFC4754SHA1)
    public static let ecdsaSignatureDigestRFC4754SHA224 =
    SecKeyAlgorithm(KeyAlgorithm.ecdsaSignatureDigestRFC4754SHA224)
    public static let ecdsaSignatureDigestRFC4754SHA256 =
    SecKeyAlgorithm(KeyAlgorithm.ecdsaSignatureDigestRFC4754SHA256)
    public static let ecdsaSignatureDigestRFC4754SHA384 =
    SecKeyAlgorithm(KeyAlgorithm.ecdsaSignatureDigestRFC4754SHA384)
    public static let ecdsaSignatureDigestRFC4754SHA512 =
    SecKeyAlgorithm(KeyAlgorithm.ecdsaSignatureDigestRFC4754SHA512)
    public static let ecdsaSignatureMessageRFC4754SHA1 = SecKeyAlgorithm(KeyAlgorithm.ecdsaSignatureMessageRFC4754SHA1)
    public static let ecdsaSignatureMessageRFC4754SHA224 =
    SecKeyAlgorithm(KeyAlgorithm.ecdsaSignatureMessageRFC4754SHA224)
    public static let ecdsaSignatureMessageRFC4754SHA256 =
    SecKeyAlgorithm(KeyAlgorithm.ecdsaSignatureMessageRFC4754SHA256)
    public static let ecdsaSignatureMessageRFC4754SHA384 =
    SecKeyAlgorithm(KeyAlgorithm.ecdsaSignatureMessageRFC4754SHA384)
    public static let ecdsaSignatureMessageRFC4754SHA512 =
    SecKeyAlgorithm(KeyAlgorithm.ecdsaSignatureMessageRFC4754SHA512)
    public static let eciesEncryptionStandardX963SHA1AESGCM =
    SecKeyAlgorithm(KeyAlgorithm.eciesEncryptionStandardX963SHA1AESGCM)
    public static let eciesEncryptionStandardX963SHA224AESGCM =
    SecKeyAlgorithm(KeyAlgorithm.eciesEncryptionStandardX963SHA224AESGCM)
    public static let eciesEncryptionStandardX963SHA256AESGCM =
    SecKeyAlgorithm(KeyAlgorithm.eciesEncryptionStandardX963SHA256AESGCM)
    public static let eciesEncryptionStandardX963SHA384AESGCM =
    SecKeyAlgorithm(KeyAlgorithm.eciesEncryptionStandardX963SHA384AESGCM)
    public static let eciesEncryptionStandardX963SHA512AESGCM =
    SecKeyAlgorithm(KeyAlgorithm.eciesEncryptionStandardX963SHA512AESGCM)
    public static let eciesEncryptionCofactorX963SHA1AESGCM =
    SecKeyAlgorithm(KeyAlgorithm.eciesEncryptionCofactorX963SHA1AESGCM)
    public static let eciesEncryptionCofactorX963SHA224AESGCM =
    SecKeyAlgorithm(KeyAlgorithm.eciesEncryptionCofactorX963SHA224AESGCM)
    public static let eciesEncryptionCofactorX963SHA256AESGCM =
    SecKeyAlgorithm(KeyAlgorithm.eciesEncryptionCofactorX963SHA256AESGCM)
    public static let eciesEncryptionCofactorX963SHA384AESGCM =
    SecKeyAlgorithm(KeyAlgorithm.eciesEncryptionCofactorX963SHA384AESGCM)
    public static let eciesEncryptionCofactorX963SHA512AESGCM =
    SecKeyAlgorithm(KeyAlgorithm.eciesEncryptionCofactorX963SHA512AESGCM)
    public static let eciesEncryptionStandardVariableIVX963SHA224AESGCM =
    SecKeyAlgorithm(KeyAlgorithm.eciesEncryptionStandardVariableIVX963SHA224AESGCM)
    public static let eciesEncryptionStandardVariableIVX963SHA256AESGCM =
    SecKeyAlgorithm(KeyAlgorithm.eciesEncryptionStandardVariableIVX963SHA256AESGCM)
    public static let eciesEncryptionStandardVariableIVX963SHA384AESGCM =
    SecKeyAlgorithm(KeyAlgorithm.eciesEncryptionStandardVariableIVX963SHA384AESGCM)
    public static let eciesEncryptionStandardVariableIVX963SHA512AESGCM =
    SecKeyAlgorithm(KeyAlgorithm.eciesEncryptionStandardVariableIVX963SHA512AESGCM)
    public static let eciesEncryptionCofactorVariableIVX963SHA224AESGCM =
    SecKeyAlgorithm(KeyAlgorithm.eciesEncryptionCofactorVariableIVX963SHA224AESGCM)
    public static let eciesEncryptionCofactorVariableIVX963SHA256AESGCM =
    SecKeyAlgorithm(KeyAlgorithm.eciesEncryptionCofactorVariableIVX963SHA256AESGCM)
    public static let eciesEncryptionCofactorVariableIVX963SHA384AESGCM =
    SecKeyAlgorithm(KeyAlgorithm.eciesEncryptionCofactorVariableIVX963SHA384AESGCM)
    public static let eciesEncryptionCofactorVariableIVX963SHA512AESGCM =
    SecKeyAlgorithm(KeyAlgorithm.eciesEncryptionCofactorVariableIVX963SHA512AESGCM)
    public static let ecdhKeyExchangeStandard = SecKeyAlgorithm(KeyAlgorithm.ecdhKeyExchangeStandard)
    public static let ecdhKeyExchangeStandardX963SHA1 = SecKeyAlgorithm(KeyAlgorithm.ecdhKeyExchangeStandardX963SHA1)
    public static let ecdhKeyExchangeStandardX963SHA224 =
    SecKeyAlgorithm(KeyAlgorithm.ecdhKeyExchangeStandardX963SHA224)
    public static let ecdhKeyExchangeStandardX963SHA256 =
    SecKeyAlgorithm(KeyAlgorithm.ecdhKeyExchangeStandardX963SHA256)
    public static let ecdhKeyExchangeStandardX963SHA384 =
    SecKeyAlgorithm(KeyAlgorithm.ecdhKeyExchangeStandardX963SHA384)
    public static let ecdhKeyExchangeStandardX963SHA512 =
    SecKeyAlgorithm(KeyAlgorithm.ecdhKeyExchangeStandardX963SHA512)
    public static let ecdhKeyExchangeCofactor = SecKeyAlgorithm(KeyAlgorithm.ecdhKeyExchangeCofactor)
    public static let ecdhKeyExchangeCofactorX963SHA1 = SecKeyAlgorithm(KeyAlgorithm.ecdhKeyExchangeCofactorX963SHA1)
    public static let ecdhKeyExchangeCofactorX963SHA224 =
    SecKeyAlgorithm(KeyAlgorithm.ecdhKeyExchangeCofactorX963SHA224)
    public static let ecdhKeyExchangeCofactorX963SHA256 =
    SecKeyAlgorithm(KeyAlgorithm.ecdhKeyExchangeCofactorX963SHA256)
    public static let ecdhKeyExchangeCofactorX963SHA384 =
    SecKeyAlgorithm(KeyAlgorithm.ecdhKeyExchangeCofactorX963SHA384)
    public static let ecdhKeyExchangeCofactorX963SHA512 =
    SecKeyAlgorithm(KeyAlgorithm.ecdhKeyExchangeCofactorX963SHA512)

    // RSA: named so code compiles; no key here does RSA (errSecUnimplemented).
    public static let rsaSignatureRaw = SecKeyAlgorithm(rawValue: "algid:sign:RSA:raw")
    public static let rsaSignatureDigestPKCS1v15Raw = SecKeyAlgorithm(rawValue: "algid:sign:RSA:digest-PKCS1v15")
    public static let rsaSignatureDigestPKCS1v15SHA1 = SecKeyAlgorithm(rawValue: "algid:sign:RSA:digest-PKCS1v15:SHA1")
    public static let rsaSignatureDigestPKCS1v15SHA224 =
    SecKeyAlgorithm(rawValue: "algid:sign:RSA:digest-PKCS1v15:SHA224")
    public static let rsaSignatureDigestPKCS1v15SHA256 =
    SecKeyAlgorithm(rawValue: "algid:sign:RSA:digest-PKCS1v15:SHA256")
    public static let rsaSignatureDigestPKCS1v15SHA384 =
    SecKeyAlgorithm(rawValue: "algid:sign:RSA:digest-PKCS1v15:SHA384")
    public static let rsaSignatureDigestPKCS1v15SHA512 =
    SecKeyAlgorithm(rawValue: "algid:sign:RSA:digest-PKCS1v15:SHA512")
    public static let rsaSignatureMessagePKCS1v15SHA1 =
    SecKeyAlgorithm(rawValue: "algid:sign:RSA:message-PKCS1v15:SHA1")
    public static let rsaSignatureMessagePKCS1v15SHA224 =
    SecKeyAlgorithm(rawValue: "algid:sign:RSA:message-PKCS1v15:SHA224")
    public static let rsaSignatureMessagePKCS1v15SHA256 =
    SecKeyAlgorithm(rawValue: "algid:sign:RSA:message-PKCS1v15:SHA256")
    public static let rsaSignatureMessagePKCS1v15SHA384 =
    SecKeyAlgorithm(rawValue: "algid:sign:RSA:message-PKCS1v15:SHA384")
    public static let rsaSignatureMessagePKCS1v15SHA512 =
    SecKeyAlgorithm(rawValue: "algid:sign:RSA:message-PKCS1v15:SHA512")
    public static let rsaSignatureDigestPSSSHA1 = SecKeyAlgorithm(rawValue: "algid:sign:RSA:digest-PSS:SHA1:SHA1:20")
    public static let rsaSignatureDigestPSSSHA224 =
    SecKeyAlgorithm(rawValue: "algid:sign:RSA:digest-PSS:SHA224:SHA224:24")
    public static let rsaSignatureDigestPSSSHA256 =
    SecKeyAlgorithm(rawValue: "algid:sign:RSA:digest-PSS:SHA256:SHA256:32")
    public static let rsaSignatureDigestPSSSHA384 =
    SecKeyAlgorithm(rawValue: "algid:sign:RSA:digest-PSS:SHA384:SHA384:48")
    public static let rsaSignatureDigestPSSSHA512 =
    SecKeyAlgorithm(rawValue: "algid:sign:RSA:digest-PSS:SHA512:SHA512:64")
    public static let rsaSignatureMessagePSSSHA1 = SecKeyAlgorithm(rawValue: "algid:sign:RSA:message-PSS:SHA1:SHA1:20")
    public static let rsaSignatureMessagePSSSHA224 =
    SecKeyAlgorithm(rawValue: "algid:sign:RSA:message-PSS:SHA224:SHA224:24")
    public static let rsaSignatureMessagePSSSHA256 =
    SecKeyAlgorithm(rawValue: "algid:sign:RSA:message-PSS:SHA256:SHA256:32")
    public static let rsaSignatureMessagePSSSHA384 =
    SecKeyAlgorithm(rawValue: "algid:sign:RSA:message-PSS:SHA384:SHA384:48")
    public static let rsaSignatureMessagePSSSHA512 =
    SecKeyAlgorithm(rawValue: "algid:sign:RSA:message-PSS:SHA512:SHA512:64")
    public static let rsaEncryptionRaw = SecKeyAlgorithm(rawValue: "algid:encrypt:RSA:raw")
    public static let rsaEncryptionPKCS1 = SecKeyAlgorithm(rawValue: "algid:encrypt:RSA:PKCS1")
    public static let rsaEncryptionOAEPSHA1 = SecKeyAlgorithm(rawValue: "algid:encrypt:RSA:OAEP:SHA1")
    public static let rsaEncryptionOAEPSHA224 = SecKeyAlgorithm(rawValue: "algid:encrypt:RSA:OAEP:SHA224")
    public static let rsaEncryptionOAEPSHA256 = SecKeyAlgorithm(rawValue: "algid:encrypt:RSA:OAEP:SHA256")
    public static let rsaEncryptionOAEPSHA384 = SecKeyAlgorithm(rawValue: "algid:encrypt:RSA:OAEP:SHA384")
    public static let rsaEncryptionOAEPSHA512 = SecKeyAlgorithm(rawValue: "algid:encrypt:RSA:OAEP:SHA512")
    public static let rsaEncryptionOAEPSHA1AESGCM = SecKeyAlgorithm(rawValue: "algid:encrypt:RSA:OAEP:SHA1:AESGCM")
    public static let rsaEncryptionOAEPSHA224AESGCM = SecKeyAlgorithm(rawValue: "algid:encrypt:RSA:OAEP:SHA224:AESGCM")
    public static let rsaEncryptionOAEPSHA256AESGCM = SecKeyAlgorithm(rawValue: "algid:encrypt:RSA:OAEP:SHA256:AESGCM")
    public static let rsaEncryptionOAEPSHA384AESGCM = SecKeyAlgorithm(rawValue: "algid:encrypt:RSA:OAEP:SHA384:AESGCM")
    public static let rsaEncryptionOAEPSHA512AESGCM = SecKeyAlgorithm(rawValue: "algid:encrypt:RSA:OAEP:SHA512:AESGCM")

    private init(_ known: KeyAlgorithm) { rawValue = known.rawValue }
    var known: KeyAlgorithm? { KeyAlgorithm(rawValue: rawValue) }
    var isRSA: Bool { rawValue.hasPrefix("algid:sign:RSA:") || rawValue.hasPrefix("algid:encrypt:RSA:") }
}

public let kSecKeyAlgorithmECDSASignatureDigestX962 = SecKeyAlgorithm.ecdsaSignatureDigestX962
public let kSecKeyAlgorithmECDSASignatureDigestX962SHA1 = SecKeyAlgorithm.ecdsaSignatureDigestX962SHA1
public let kSecKeyAlgorithmECDSASignatureDigestX962SHA224 = SecKeyAlgorithm.ecdsaSignatureDigestX962SHA224
public let kSecKeyAlgorithmECDSASignatureDigestX962SHA256 = SecKeyAlgorithm.ecdsaSignatureDigestX962SHA256
public let kSecKeyAlgorithmECDSASignatureDigestX962SHA384 = SecKeyAlgorithm.ecdsaSignatureDigestX962SHA384
public let kSecKeyAlgorithmECDSASignatureDigestX962SHA512 = SecKeyAlgorithm.ecdsaSignatureDigestX962SHA512
public let kSecKeyAlgorithmECDSASignatureMessageX962SHA1 = SecKeyAlgorithm.ecdsaSignatureMessageX962SHA1
public let kSecKeyAlgorithmECDSASignatureMessageX962SHA224 = SecKeyAlgorithm.ecdsaSignatureMessageX962SHA224
public let kSecKeyAlgorithmECDSASignatureMessageX962SHA256 = SecKeyAlgorithm.ecdsaSignatureMessageX962SHA256
public let kSecKeyAlgorithmECDSASignatureMessageX962SHA384 = SecKeyAlgorithm.ecdsaSignatureMessageX962SHA384
public let kSecKeyAlgorithmECDSASignatureMessageX962SHA512 = SecKeyAlgorithm.ecdsaSignatureMessageX962SHA512
public let kSecKeyAlgorithmECDSASignatureRFC4754 = SecKeyAlgorithm.ecdsaSignatureRFC4754
public let kSecKeyAlgorithmECDSASignatureDigestRFC4754 = SecKeyAlgorithm.ecdsaSignatureDigestRFC4754
public let kSecKeyAlgorithmECDSASignatureDigestRFC4754SHA1 = SecKeyAlgorithm.ecdsaSignatureDigestRFC4754SHA1
public let kSecKeyAlgorithmECDSASignatureDigestRFC4754SHA224 = SecKeyAlgorithm.ecdsaSignatureDigestRFC4754SHA224
public let kSecKeyAlgorithmECDSASignatureDigestRFC4754SHA256 = SecKeyAlgorithm.ecdsaSignatureDigestRFC4754SHA256
public let kSecKeyAlgorithmECDSASignatureDigestRFC4754SHA384 = SecKeyAlgorithm.ecdsaSignatureDigestRFC4754SHA384
public let kSecKeyAlgorithmECDSASignatureDigestRFC4754SHA512 = SecKeyAlgorithm.ecdsaSignatureDigestRFC4754SHA512
public let kSecKeyAlgorithmECDSASignatureMessageRFC4754SHA1 = SecKeyAlgorithm.ecdsaSignatureMessageRFC4754SHA1
public let kSecKeyAlgorithmECDSASignatureMessageRFC4754SHA224 = SecKeyAlgorithm.ecdsaSignatureMessageRFC4754SHA224
public let kSecKeyAlgorithmECDSASignatureMessageRFC4754SHA256 = SecKeyAlgorithm.ecdsaSignatureMessageRFC4754SHA256
public let kSecKeyAlgorithmECDSASignatureMessageRFC4754SHA384 = SecKeyAlgorithm.ecdsaSignatureMessageRFC4754SHA384
public let kSecKeyAlgorithmECDSASignatureMessageRFC4754SHA512 = SecKeyAlgorithm.ecdsaSignatureMessageRFC4754SHA512
public let kSecKeyAlgorithmECIESEncryptionStandardX963SHA1AESGCM = SecKeyAlgorithm.eciesEncryptionStandardX963SHA1AESGCM
public let kSecKeyAlgorithmECIESEncryptionStandardX963SHA224AESGCM =
    SecKeyAlgorithm.eciesEncryptionStandardX963SHA224AESGCM
public let kSecKeyAlgorithmECIESEncryptionStandardX963SHA256AESGCM =
    SecKeyAlgorithm.eciesEncryptionStandardX963SHA256AESGCM
public let kSecKeyAlgorithmECIESEncryptionStandardX963SHA384AESGCM =
    SecKeyAlgorithm.eciesEncryptionStandardX963SHA384AESGCM
public let kSecKeyAlgorithmECIESEncryptionStandardX963SHA512AESGCM =
    SecKeyAlgorithm.eciesEncryptionStandardX963SHA512AESGCM
public let kSecKeyAlgorithmECIESEncryptionCofactorX963SHA1AESGCM = SecKeyAlgorithm.eciesEncryptionCofactorX963SHA1AESGCM
public let kSecKeyAlgorithmECIESEncryptionCofactorX963SHA224AESGCM =
    SecKeyAlgorithm.eciesEncryptionCofactorX963SHA224AESGCM
public let kSecKeyAlgorithmECIESEncryptionCofactorX963SHA256AESGCM =
    SecKeyAlgorithm.eciesEncryptionCofactorX963SHA256AESGCM
public let kSecKeyAlgorithmECIESEncryptionCofactorX963SHA384AESGCM =
    SecKeyAlgorithm.eciesEncryptionCofactorX963SHA384AESGCM
public let kSecKeyAlgorithmECIESEncryptionCofactorX963SHA512AESGCM =
    SecKeyAlgorithm.eciesEncryptionCofactorX963SHA512AESGCM
public let kSecKeyAlgorithmECIESEncryptionStandardVariableIVX963SHA224AESGCM =
    SecKeyAlgorithm.eciesEncryptionStandardVariableIVX963SHA224AESGCM
public let kSecKeyAlgorithmECIESEncryptionStandardVariableIVX963SHA256AESGCM =
    SecKeyAlgorithm.eciesEncryptionStandardVariableIVX963SHA256AESGCM
public let kSecKeyAlgorithmECIESEncryptionStandardVariableIVX963SHA384AESGCM =
    SecKeyAlgorithm.eciesEncryptionStandardVariableIVX963SHA384AESGCM
public let kSecKeyAlgorithmECIESEncryptionStandardVariableIVX963SHA512AESGCM =
    SecKeyAlgorithm.eciesEncryptionStandardVariableIVX963SHA512AESGCM
public let kSecKeyAlgorithmECIESEncryptionCofactorVariableIVX963SHA224AESGCM =
    SecKeyAlgorithm.eciesEncryptionCofactorVariableIVX963SHA224AESGCM
public let kSecKeyAlgorithmECIESEncryptionCofactorVariableIVX963SHA256AESGCM =
    SecKeyAlgorithm.eciesEncryptionCofactorVariableIVX963SHA256AESGCM
public let kSecKeyAlgorithmECIESEncryptionCofactorVariableIVX963SHA384AESGCM =
    SecKeyAlgorithm.eciesEncryptionCofactorVariableIVX963SHA384AESGCM
public let kSecKeyAlgorithmECIESEncryptionCofactorVariableIVX963SHA512AESGCM =
    SecKeyAlgorithm.eciesEncryptionCofactorVariableIVX963SHA512AESGCM
public let kSecKeyAlgorithmECDHKeyExchangeStandard = SecKeyAlgorithm.ecdhKeyExchangeStandard
public let kSecKeyAlgorithmECDHKeyExchangeStandardX963SHA1 = SecKeyAlgorithm.ecdhKeyExchangeStandardX963SHA1
public let kSecKeyAlgorithmECDHKeyExchangeStandardX963SHA224 = SecKeyAlgorithm.ecdhKeyExchangeStandardX963SHA224
public let kSecKeyAlgorithmECDHKeyExchangeStandardX963SHA256 = SecKeyAlgorithm.ecdhKeyExchangeStandardX963SHA256
public let kSecKeyAlgorithmECDHKeyExchangeStandardX963SHA384 = SecKeyAlgorithm.ecdhKeyExchangeStandardX963SHA384
public let kSecKeyAlgorithmECDHKeyExchangeStandardX963SHA512 = SecKeyAlgorithm.ecdhKeyExchangeStandardX963SHA512
public let kSecKeyAlgorithmECDHKeyExchangeCofactor = SecKeyAlgorithm.ecdhKeyExchangeCofactor
public let kSecKeyAlgorithmECDHKeyExchangeCofactorX963SHA1 = SecKeyAlgorithm.ecdhKeyExchangeCofactorX963SHA1
public let kSecKeyAlgorithmECDHKeyExchangeCofactorX963SHA224 = SecKeyAlgorithm.ecdhKeyExchangeCofactorX963SHA224
public let kSecKeyAlgorithmECDHKeyExchangeCofactorX963SHA256 = SecKeyAlgorithm.ecdhKeyExchangeCofactorX963SHA256
public let kSecKeyAlgorithmECDHKeyExchangeCofactorX963SHA384 = SecKeyAlgorithm.ecdhKeyExchangeCofactorX963SHA384
public let kSecKeyAlgorithmECDHKeyExchangeCofactorX963SHA512 = SecKeyAlgorithm.ecdhKeyExchangeCofactorX963SHA512
public let kSecKeyAlgorithmRSASignatureRaw = SecKeyAlgorithm.rsaSignatureRaw
public let kSecKeyAlgorithmRSASignatureDigestPKCS1v15Raw = SecKeyAlgorithm.rsaSignatureDigestPKCS1v15Raw
public let kSecKeyAlgorithmRSASignatureDigestPKCS1v15SHA1 = SecKeyAlgorithm.rsaSignatureDigestPKCS1v15SHA1
public let kSecKeyAlgorithmRSASignatureDigestPKCS1v15SHA224 = SecKeyAlgorithm.rsaSignatureDigestPKCS1v15SHA224
public let kSecKeyAlgorithmRSASignatureDigestPKCS1v15SHA256 = SecKeyAlgorithm.rsaSignatureDigestPKCS1v15SHA256
public let kSecKeyAlgorithmRSASignatureDigestPKCS1v15SHA384 = SecKeyAlgorithm.rsaSignatureDigestPKCS1v15SHA384
public let kSecKeyAlgorithmRSASignatureDigestPKCS1v15SHA512 = SecKeyAlgorithm.rsaSignatureDigestPKCS1v15SHA512
public let kSecKeyAlgorithmRSASignatureMessagePKCS1v15SHA1 = SecKeyAlgorithm.rsaSignatureMessagePKCS1v15SHA1
public let kSecKeyAlgorithmRSASignatureMessagePKCS1v15SHA224 = SecKeyAlgorithm.rsaSignatureMessagePKCS1v15SHA224
public let kSecKeyAlgorithmRSASignatureMessagePKCS1v15SHA256 = SecKeyAlgorithm.rsaSignatureMessagePKCS1v15SHA256
public let kSecKeyAlgorithmRSASignatureMessagePKCS1v15SHA384 = SecKeyAlgorithm.rsaSignatureMessagePKCS1v15SHA384
public let kSecKeyAlgorithmRSASignatureMessagePKCS1v15SHA512 = SecKeyAlgorithm.rsaSignatureMessagePKCS1v15SHA512
public let kSecKeyAlgorithmRSASignatureDigestPSSSHA1 = SecKeyAlgorithm.rsaSignatureDigestPSSSHA1
public let kSecKeyAlgorithmRSASignatureDigestPSSSHA224 = SecKeyAlgorithm.rsaSignatureDigestPSSSHA224
public let kSecKeyAlgorithmRSASignatureDigestPSSSHA256 = SecKeyAlgorithm.rsaSignatureDigestPSSSHA256
public let kSecKeyAlgorithmRSASignatureDigestPSSSHA384 = SecKeyAlgorithm.rsaSignatureDigestPSSSHA384
public let kSecKeyAlgorithmRSASignatureDigestPSSSHA512 = SecKeyAlgorithm.rsaSignatureDigestPSSSHA512
public let kSecKeyAlgorithmRSASignatureMessagePSSSHA1 = SecKeyAlgorithm.rsaSignatureMessagePSSSHA1
public let kSecKeyAlgorithmRSASignatureMessagePSSSHA224 = SecKeyAlgorithm.rsaSignatureMessagePSSSHA224
public let kSecKeyAlgorithmRSASignatureMessagePSSSHA256 = SecKeyAlgorithm.rsaSignatureMessagePSSSHA256
public let kSecKeyAlgorithmRSASignatureMessagePSSSHA384 = SecKeyAlgorithm.rsaSignatureMessagePSSSHA384
public let kSecKeyAlgorithmRSASignatureMessagePSSSHA512 = SecKeyAlgorithm.rsaSignatureMessagePSSSHA512
public let kSecKeyAlgorithmRSAEncryptionRaw = SecKeyAlgorithm.rsaEncryptionRaw
public let kSecKeyAlgorithmRSAEncryptionPKCS1 = SecKeyAlgorithm.rsaEncryptionPKCS1
public let kSecKeyAlgorithmRSAEncryptionOAEPSHA1 = SecKeyAlgorithm.rsaEncryptionOAEPSHA1
public let kSecKeyAlgorithmRSAEncryptionOAEPSHA224 = SecKeyAlgorithm.rsaEncryptionOAEPSHA224
public let kSecKeyAlgorithmRSAEncryptionOAEPSHA256 = SecKeyAlgorithm.rsaEncryptionOAEPSHA256
public let kSecKeyAlgorithmRSAEncryptionOAEPSHA384 = SecKeyAlgorithm.rsaEncryptionOAEPSHA384
public let kSecKeyAlgorithmRSAEncryptionOAEPSHA512 = SecKeyAlgorithm.rsaEncryptionOAEPSHA512
public let kSecKeyAlgorithmRSAEncryptionOAEPSHA1AESGCM = SecKeyAlgorithm.rsaEncryptionOAEPSHA1AESGCM
public let kSecKeyAlgorithmRSAEncryptionOAEPSHA224AESGCM = SecKeyAlgorithm.rsaEncryptionOAEPSHA224AESGCM
public let kSecKeyAlgorithmRSAEncryptionOAEPSHA256AESGCM = SecKeyAlgorithm.rsaEncryptionOAEPSHA256AESGCM
public let kSecKeyAlgorithmRSAEncryptionOAEPSHA384AESGCM = SecKeyAlgorithm.rsaEncryptionOAEPSHA384AESGCM
public let kSecKeyAlgorithmRSAEncryptionOAEPSHA512AESGCM = SecKeyAlgorithm.rsaEncryptionOAEPSHA512AESGCM

/// The parameters of SecKeyCopyKeyExchangeResult's X9.63 algorithms, Apple's strings.
public struct SecKeyKeyExchangeParameter: RawRepresentable, Hashable, Sendable {
    public let rawValue: CFString
    public init(rawValue: CFString) { self.rawValue = rawValue }

    /// The size of the derived key in bytes (a number); required.
    public static let requestedSize = SecKeyKeyExchangeParameter(rawValue: "requestedSize")
    /// Data the KDF mixes in (Data); optional.
    public static let sharedInfo = SecKeyKeyExchangeParameter(rawValue: "sharedInfo")
}

/// As C spells them, for dictionary keys (`kSecKeyKeyExchangeParameterRequestedSize as String`).
public let kSecKeyKeyExchangeParameterRequestedSize: CFString = SecKeyKeyExchangeParameter.requestedSize.rawValue
public let kSecKeyKeyExchangeParameterSharedInfo: CFString = SecKeyKeyExchangeParameter.sharedInfo.rawValue

public enum SecKeyOperationType: Int, Sendable {
    case sign = 0, verify = 1, encrypt = 2, decrypt = 3, keyExchange = 4
}
