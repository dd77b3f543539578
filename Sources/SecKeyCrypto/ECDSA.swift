// ECDSA with P-256 under Apple's algorithm names: signatures are X9.62 DER (or r || s
// for the RFC 4754 names), as SecKeyCreateSignature gives them; a message algorithm
// hashes the message and signs the digest, as the digest algorithms sign theirs.
import Crypto
import Foundation

public enum ECDSA {
    public static func sign(_ input: Data, algorithm: KeyAlgorithm, with key: P256.Signing.PrivateKey) throws -> Data {
        let signature = try key.signature(for: try digest(input, algorithm))
        return algorithm.signsRaw ? signature.rawRepresentation : signature.derRepresentation
    }

    /// False for a signature that does not verify or does not parse.
    public static func verify(_ signature: Data, of input: Data, algorithm: KeyAlgorithm,
                              with key: P256.Signing.PublicKey) throws -> Bool {
        let parsed = algorithm.signsRaw ? try? P256.Signing.ECDSASignature(rawRepresentation: signature)
                                        : try? P256.Signing.ECDSASignature(derRepresentation: signature)
        guard let parsed else { return false }
        return key.isValidSignature(parsed, for: try digest(input, algorithm))
    }

    /// What to have a key held elsewhere sign in place of `input`: the digest
    /// algorithm and the message's digest for a message algorithm, else both as given.
    public static func digestForm(of input: Data, algorithm: KeyAlgorithm) throws -> (KeyAlgorithm, Data) {
        guard algorithm.hashesMessage, let hash = algorithm.hash else { return (algorithm, input) }
        return (algorithm.digestAlgorithm, try hash.digest(of: input))
    }

    private static func digest(_ input: Data, _ algorithm: KeyAlgorithm) throws -> RawDigest {
        let (digestAlgorithm, digest) = try digestForm(of: input, algorithm: algorithm)
        return try RawDigest(digest, digestAlgorithm)
    }
}

/// A digest the caller computed: swift-crypto signs any `Digest`, by its bytes, and
/// its own digests cannot be made from bytes. One of a named hash must have that
/// hash's size; one of "some hash" (digest-X962, RFC4754) any size up to SHA-512's.
struct RawDigest: Digest {
    static let byteCount = 64
    private let bytes: [UInt8]

    init(_ data: Data, _ algorithm: KeyAlgorithm) throws {
        guard algorithm.kind == .signature, !algorithm.hashesMessage else { throw KeyCryptoError.param }
        if let hash = algorithm.hash {
            guard data.count == hash.byteCount else { throw KeyCryptoError.param }
        } else {
            guard (1...Self.byteCount).contains(data.count) else { throw KeyCryptoError.param }
        }
        bytes = Array(data)
    }

    func withUnsafeBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try bytes.withUnsafeBytes(body)
    }

    func makeIterator() -> IndexingIterator<[UInt8]> { bytes.makeIterator() }

    var description: String { "RawDigest" }
}
