// The SecKeyAlgorithm names of elliptic-curve keys, with Apple's string values (its
// open-source SecKeyAdaptors.m defines them), and what each one asks of a P-256 key.
// The values say it all ("algid:sign:ECDSA:message-X962:SHA256"): the properties read
// them. RSA's names are declared by the Security library alone; no key here does RSA.

public enum KeyAlgorithm: String, Sendable, CaseIterable {
    // ECDSA, X9.62 DER signatures: of a digest (of any size, or of the named hash), or of a
    // message the named hash digests first.
    case ecdsaSignatureDigestX962 = "algid:sign:ECDSA:digest-X962"
    case ecdsaSignatureDigestX962SHA1 = "algid:sign:ECDSA:digest-X962:SHA1"
    case ecdsaSignatureDigestX962SHA224 = "algid:sign:ECDSA:digest-X962:SHA224"
    case ecdsaSignatureDigestX962SHA256 = "algid:sign:ECDSA:digest-X962:SHA256"
    case ecdsaSignatureDigestX962SHA384 = "algid:sign:ECDSA:digest-X962:SHA384"
    case ecdsaSignatureDigestX962SHA512 = "algid:sign:ECDSA:digest-X962:SHA512"
    case ecdsaSignatureMessageX962SHA1 = "algid:sign:ECDSA:message-X962:SHA1"
    case ecdsaSignatureMessageX962SHA224 = "algid:sign:ECDSA:message-X962:SHA224"
    case ecdsaSignatureMessageX962SHA256 = "algid:sign:ECDSA:message-X962:SHA256"
    case ecdsaSignatureMessageX962SHA384 = "algid:sign:ECDSA:message-X962:SHA384"
    case ecdsaSignatureMessageX962SHA512 = "algid:sign:ECDSA:message-X962:SHA512"
    // ECDSA, RFC 4754 signatures (r || s, 64 bytes on P-256), the same inputs.
    case ecdsaSignatureRFC4754 = "algid:sign:ECDSA:RFC4754"
    case ecdsaSignatureDigestRFC4754 = "algid:sign:ECDSA:digest-RFC4754"
    case ecdsaSignatureDigestRFC4754SHA1 = "algid:sign:ECDSA:digest-RFC4754:SHA1"
    case ecdsaSignatureDigestRFC4754SHA224 = "algid:sign:ECDSA:digest-RFC4754:SHA224"
    case ecdsaSignatureDigestRFC4754SHA256 = "algid:sign:ECDSA:digest-RFC4754:SHA256"
    case ecdsaSignatureDigestRFC4754SHA384 = "algid:sign:ECDSA:digest-RFC4754:SHA384"
    case ecdsaSignatureDigestRFC4754SHA512 = "algid:sign:ECDSA:digest-RFC4754:SHA512"
    case ecdsaSignatureMessageRFC4754SHA1 = "algid:sign:ECDSA:message-RFC4754:SHA1"
    case ecdsaSignatureMessageRFC4754SHA224 = "algid:sign:ECDSA:message-RFC4754:SHA224"
    case ecdsaSignatureMessageRFC4754SHA256 = "algid:sign:ECDSA:message-RFC4754:SHA256"
    case ecdsaSignatureMessageRFC4754SHA384 = "algid:sign:ECDSA:message-RFC4754:SHA384"
    case ecdsaSignatureMessageRFC4754SHA512 = "algid:sign:ECDSA:message-RFC4754:SHA512"
    // Apple's ECIES (ECIES.swift), the KDF's hash named.
    case eciesEncryptionStandardX963SHA1AESGCM = "algid:encrypt:ECIES:ECDH:KDFX963:SHA1:AESGCM"
    case eciesEncryptionStandardX963SHA224AESGCM = "algid:encrypt:ECIES:ECDH:KDFX963:SHA224:AESGCM"
    case eciesEncryptionStandardX963SHA256AESGCM = "algid:encrypt:ECIES:ECDH:KDFX963:SHA256:AESGCM"
    case eciesEncryptionStandardX963SHA384AESGCM = "algid:encrypt:ECIES:ECDH:KDFX963:SHA384:AESGCM"
    case eciesEncryptionStandardX963SHA512AESGCM = "algid:encrypt:ECIES:ECDH:KDFX963:SHA512:AESGCM"
    case eciesEncryptionCofactorX963SHA1AESGCM = "algid:encrypt:ECIES:ECDHC:KDFX963:SHA1:AESGCM"
    case eciesEncryptionCofactorX963SHA224AESGCM = "algid:encrypt:ECIES:ECDHC:KDFX963:SHA224:AESGCM"
    case eciesEncryptionCofactorX963SHA256AESGCM = "algid:encrypt:ECIES:ECDHC:KDFX963:SHA256:AESGCM"
    case eciesEncryptionCofactorX963SHA384AESGCM = "algid:encrypt:ECIES:ECDHC:KDFX963:SHA384:AESGCM"
    case eciesEncryptionCofactorX963SHA512AESGCM = "algid:encrypt:ECIES:ECDHC:KDFX963:SHA512:AESGCM"
    case eciesEncryptionStandardVariableIVX963SHA224AESGCM = "algid:encrypt:ECIES:ECDH:KDFX963:SHA224:AESGCM-KDFIV"
    case eciesEncryptionStandardVariableIVX963SHA256AESGCM = "algid:encrypt:ECIES:ECDH:KDFX963:SHA256:AESGCM-KDFIV"
    case eciesEncryptionStandardVariableIVX963SHA384AESGCM = "algid:encrypt:ECIES:ECDH:KDFX963:SHA384:AESGCM-KDFIV"
    case eciesEncryptionStandardVariableIVX963SHA512AESGCM = "algid:encrypt:ECIES:ECDH:KDFX963:SHA512:AESGCM-KDFIV"
    case eciesEncryptionCofactorVariableIVX963SHA224AESGCM = "algid:encrypt:ECIES:ECDHC:KDFX963:SHA224:AESGCM-KDFIV"
    case eciesEncryptionCofactorVariableIVX963SHA256AESGCM = "algid:encrypt:ECIES:ECDHC:KDFX963:SHA256:AESGCM-KDFIV"
    case eciesEncryptionCofactorVariableIVX963SHA384AESGCM = "algid:encrypt:ECIES:ECDHC:KDFX963:SHA384:AESGCM-KDFIV"
    case eciesEncryptionCofactorVariableIVX963SHA512AESGCM = "algid:encrypt:ECIES:ECDHC:KDFX963:SHA512:AESGCM-KDFIV"
    // ECDH: the raw shared secret, or the X9.63 KDF of it with the named hash.
    case ecdhKeyExchangeStandard = "algid:keyexchange:ECDH"
    case ecdhKeyExchangeStandardX963SHA1 = "algid:keyexchange:ECDH:KDFX963:SHA1"
    case ecdhKeyExchangeStandardX963SHA224 = "algid:keyexchange:ECDH:KDFX963:SHA224"
    case ecdhKeyExchangeStandardX963SHA256 = "algid:keyexchange:ECDH:KDFX963:SHA256"
    case ecdhKeyExchangeStandardX963SHA384 = "algid:keyexchange:ECDH:KDFX963:SHA384"
    case ecdhKeyExchangeStandardX963SHA512 = "algid:keyexchange:ECDH:KDFX963:SHA512"
    case ecdhKeyExchangeCofactor = "algid:keyexchange:ECDHC"
    case ecdhKeyExchangeCofactorX963SHA1 = "algid:keyexchange:ECDHC:KDFX963:SHA1"
    case ecdhKeyExchangeCofactorX963SHA224 = "algid:keyexchange:ECDHC:KDFX963:SHA224"
    case ecdhKeyExchangeCofactorX963SHA256 = "algid:keyexchange:ECDHC:KDFX963:SHA256"
    case ecdhKeyExchangeCofactorX963SHA384 = "algid:keyexchange:ECDHC:KDFX963:SHA384"
    case ecdhKeyExchangeCofactorX963SHA512 = "algid:keyexchange:ECDHC:KDFX963:SHA512"

    public enum Kind: Sendable { case signature, encryption, keyExchange }

    public var kind: Kind {
        if rawValue.hasPrefix("algid:sign:") { return .signature }
        if rawValue.hasPrefix("algid:encrypt:") { return .encryption }
        return .keyExchange
    }

    /// The hash the name ends with: of the message or the digest's size for a
    /// signature, the KDF's for ECIES and ECDH; nil where it names none.
    public var hash: KeyHash? {
        rawValue.split(separator: ":").lazy.compactMap { KeyHash(rawValue: String($0)) }.first
    }

    /// Whether the input is the message itself (hashed first) rather than its digest.
    public var hashesMessage: Bool { rawValue.contains(":message-") }

    /// The digest algorithm a message algorithm signs with once it has hashed the
    /// message (iOS hashes in the caller's process, then signs the digest).
    public var digestAlgorithm: KeyAlgorithm {
        KeyAlgorithm(rawValue: rawValue.replacingOccurrences(of: ":message-", with: ":digest-")) ?? self
    }

    /// A signature as r || s (RFC 4754) rather than X9.62 DER.
    public var signsRaw: Bool { rawValue.contains("RFC4754") }

    /// ECIES whose GCM IV comes from the KDF (the "VariableIV" names), rather than
    /// sixteen zero bytes. On P-256 the cofactor is 1, so Standard and Cofactor agree.
    public var variableIV: Bool { rawValue.hasSuffix("AESGCM-KDFIV") }

    /// ECDH whose result is the X9.63 KDF of the shared secret (kSecKeyKeyExchangeParameterRequestedSize).
    public var derivesKey: Bool { kind == .keyExchange && hash != nil }

    /// Whether this process can do it: swift-crypto has no SHA-224, so an algorithm
    /// that must compute one (hash a message, or derive a key, with it) cannot. A
    /// SHA-224 digest given to sign is only 28 bytes, and signs.
    public var isAvailable: Bool {
        guard hash == .sha224 else { return true }
        return kind == .signature && !hashesMessage
    }
}
