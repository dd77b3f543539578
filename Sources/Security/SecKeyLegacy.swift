// The SecKey functions of before iOS 10 that iOS still ships (deprecated, not removed)
// and that older key libraries call: SecKeyGeneratePair, SecKeyRawSign, SecKeyRawVerify,
// SecKeyEncrypt and SecKeyDecrypt with their SecPadding. Each is the newer call under
// the algorithm Apple's own shims pick for the padding and the key, so they behave as
// those do on iOS: an EC key signs the digest it is given in X9.62 (in r || s with
// .sigRaw), and encryption with a padding is RSA's, which no key here does.
import Foundation
import SecKeyCrypto

/// Apple's CF_OPTIONS of the legacy calls, with its values.
public struct SecPadding: OptionSet, Sendable {
    public let rawValue: UInt32
    public init(rawValue: UInt32) { self.rawValue = rawValue }

    public static let PKCS1 = SecPadding(rawValue: 1)
    public static let OAEP = SecPadding(rawValue: 2)
    public static let sigRaw = SecPadding(rawValue: 0x4000)
    public static let PKCS1MD2 = SecPadding(rawValue: 0x8000)
    public static let PKCS1MD5 = SecPadding(rawValue: 0x8001)
    public static let PKCS1SHA1 = SecPadding(rawValue: 0x8002)
    public static let PKCS1SHA224 = SecPadding(rawValue: 0x8003)
    public static let PKCS1SHA256 = SecPadding(rawValue: 0x8004)
    public static let PKCS1SHA384 = SecPadding(rawValue: 0x8005)
    public static let PKCS1SHA512 = SecPadding(rawValue: 0x8006)
}

/// The legacy verify's answer to a signature that does not verify, where the newer
/// call answers errSecVerifyFailed.
public let errSSLCrypto: OSStatus = -9809

/// A new key pair, as SecKeyCreateRandomKey makes it (stored when it asks so), and its
/// public key.
public func SecKeyGeneratePair(_ parameters: CFDictionary, _ publicKey: UnsafeMutablePointer<SecKey?>?,
                               _ privateKey: UnsafeMutablePointer<SecKey?>?) -> OSStatus {
    var error: Unmanaged<CFError>?
    guard let made = SecKeyCreateRandomKey(parameters, &error) else {
        return OSStatus(truncatingIfNeeded: error?.takeRetainedValue().code ?? Int(errSecParam))
    }
    privateKey?.pointee = made
    publicKey?.pointee = SecKeyCopyPublicKey(made)
    return errSecSuccess
}

/// The signature of the digest `dataToSign` into `sig`, whose capacity `sigLen` gives
/// and which it is set to the signature's length; errSecParam when it does not fit.
public func SecKeyRawSign(_ key: SecKey, _ padding: SecPadding, _ dataToSign: UnsafePointer<UInt8>,
                          _ dataToSignLen: Int, _ sig: UnsafeMutablePointer<UInt8>,
                          _ sigLen: UnsafeMutablePointer<Int>) -> OSStatus {
    let digest = Data(bytes: dataToSign, count: dataToSignLen)
    var error: Unmanaged<CFError>?
    guard let signature = SecKeyCreateSignature(key, LegacyPadding.signatureAlgorithm(padding, digestSize: dataToSignLen),
                                                digest as CFData, &error) else {
        return LegacyPadding.status(of: error)
    }
    return LegacyPadding.copy(signature, into: sig, capacity: sigLen)
}

/// errSecSuccess when `sig` is `key`'s signature of the digest `signedData`; errSSLCrypto
/// when it is not, as the legacy call answers.
public func SecKeyRawVerify(_ key: SecKey, _ padding: SecPadding, _ signedData: UnsafePointer<UInt8>,
                            _ signedDataLen: Int, _ sig: UnsafePointer<UInt8>, _ sigLen: Int) -> OSStatus {
    let digest = Data(bytes: signedData, count: signedDataLen), signature = Data(bytes: sig, count: sigLen)
    var error: Unmanaged<CFError>?
    let algorithm = LegacyPadding.signatureAlgorithm(padding, digestSize: signedDataLen)
    if SecKeyVerifySignature(key, algorithm, digest as CFData, signature as CFData, &error) { return errSecSuccess }
    let status = LegacyPadding.status(of: error)
    return status == errSecVerifyFailed ? errSSLCrypto : status
}

/// RSA's encryption with a padding: errSecParam for the P-256 keys here, as iOS answers
/// an EC key (ECIES is SecKeyCreateEncryptedData's).
public func SecKeyEncrypt(_ key: SecKey, _ padding: SecPadding, _ plainText: UnsafePointer<UInt8>, _ plainTextLen: Int,
                          _ cipherText: UnsafeMutablePointer<UInt8>, _ cipherTextLen: UnsafeMutablePointer<Int>) -> OSStatus {
    errSecParam
}

/// RSA's decryption with a padding: errSecParam for the P-256 keys here, as iOS answers
/// an EC key.
public func SecKeyDecrypt(_ key: SecKey, _ padding: SecPadding, _ cipherText: UnsafePointer<UInt8>, _ cipherTextLen: Int,
                          _ plainText: UnsafeMutablePointer<UInt8>, _ plainTextLen: UnsafeMutablePointer<Int>) -> OSStatus {
    errSecParam
}

enum LegacyPadding {
    /// The algorithm an EC key signs with under `padding`: r || s for .sigRaw, else
    /// X9.62, naming the hash whose digest is that long (any other padding, even none,
    /// is X9.62 on iOS too).
    static func signatureAlgorithm(_ padding: SecPadding, digestSize: Int) -> SecKeyAlgorithm {
        if padding == .sigRaw { return .ecdsaSignatureDigestRFC4754 }
        guard padding == .PKCS1 else { return .ecdsaSignatureDigestX962 }
        switch digestSize {
        case 20: return .ecdsaSignatureDigestX962SHA1
        case 28: return .ecdsaSignatureDigestX962SHA224
        case 32: return .ecdsaSignatureDigestX962SHA256
        case 48: return .ecdsaSignatureDigestX962SHA384
        case 64: return .ecdsaSignatureDigestX962SHA512
        default: return .ecdsaSignatureDigestX962
        }
    }

    static func status(of error: Unmanaged<CFError>?) -> OSStatus {
        OSStatus(truncatingIfNeeded: error?.takeRetainedValue().code ?? Int(errSecParam))
    }

    static func copy(_ output: CFData, into buffer: UnsafeMutablePointer<UInt8>,
                     capacity: UnsafeMutablePointer<Int>) -> OSStatus {
        let bytes = output as Data
        guard bytes.count <= capacity.pointee else { return errSecParam }
        bytes.copyBytes(to: buffer, count: bytes.count)
        capacity.pointee = bytes.count
        return errSecSuccess
    }
}
