// The SecKeyAlgorithm names this keychain answers, with Apple's string values (its
// open-source SecKey.m lists them), and what each one asks of a P-256 key.

public enum KeyAlgorithm: String, Sendable, CaseIterable {
    case ecdsaSignatureMessageX962SHA256 = "algid:sign:ECDSA:message-X962:SHA256"
    case ecdsaSignatureDigestX962SHA256 = "algid:sign:ECDSA:digest-X962:SHA256"
    /// Digest of any size on Apple; here the digest must be SHA-256's 32 bytes.
    case ecdsaSignatureDigestX962 = "algid:sign:ECDSA:digest-X962"
    case eciesEncryptionStandardX963SHA256AESGCM = "algid:encrypt:ECIES:ECDH:KDFX963:SHA256:AESGCM"
    case eciesEncryptionCofactorX963SHA256AESGCM = "algid:encrypt:ECIES:ECDHC:KDFX963:SHA256:AESGCM"
    case eciesEncryptionStandardVariableIVX963SHA256AESGCM = "algid:encrypt:ECIES:ECDH:KDFX963:SHA256:AESGCM-KDFIV"
    case eciesEncryptionCofactorVariableIVX963SHA256AESGCM = "algid:encrypt:ECIES:ECDHC:KDFX963:SHA256:AESGCM-KDFIV"
    case ecdhKeyExchangeStandard = "algid:keyexchange:ECDH"
    case ecdhKeyExchangeCofactor = "algid:keyexchange:ECDHC"

    public enum Kind: Sendable { case signature, encryption, keyExchange }

    public var kind: Kind {
        switch self {
        case .ecdsaSignatureMessageX962SHA256, .ecdsaSignatureDigestX962SHA256, .ecdsaSignatureDigestX962: return .signature
        case .ecdhKeyExchangeStandard, .ecdhKeyExchangeCofactor: return .keyExchange
        default: return .encryption
        }
    }

    /// Whether the input is the message itself (hashed here) rather than its digest.
    public var hashesMessage: Bool { self == .ecdsaSignatureMessageX962SHA256 }

    /// ECIES whose GCM IV comes from the KDF (the "VariableIV" names), rather than
    /// sixteen zero bytes. On P-256 the cofactor is 1, so Standard and Cofactor agree.
    public var variableIV: Bool {
        self == .eciesEncryptionStandardVariableIVX963SHA256AESGCM || self == .eciesEncryptionCofactorVariableIVX963SHA256AESGCM
    }
}
