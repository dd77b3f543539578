// ECDSA with P-256 under Apple's algorithm names: signatures are X9.62 DER, as
// SecKeyCreateSignature gives them; the digest algorithms take a SHA-256 digest.
import Crypto
import Foundation

public enum ECDSA {
    public static func sign(_ input: Data, algorithm: KeyAlgorithm, with key: P256.Signing.PrivateKey) throws -> Data {
        if algorithm.hashesMessage { return try key.signature(for: input).derRepresentation }
        return try key.signature(for: try RawSHA256Digest(input, algorithm)).derRepresentation
    }

    /// What to have a key held elsewhere sign in place of `input`: the digest
    /// algorithm and the message's digest for a message algorithm, else both as given.
    public static func digestForm(of input: Data, algorithm: KeyAlgorithm) -> (KeyAlgorithm, Data) {
        guard algorithm.hashesMessage else { return (algorithm, input) }
        return (.ecdsaSignatureDigestX962SHA256, Data(SHA256.hash(data: input)))
    }

    /// False for a signature that does not verify or does not parse.
    public static func verify(_ signature: Data, of input: Data, algorithm: KeyAlgorithm,
                              with key: P256.Signing.PublicKey) throws -> Bool {
        guard let parsed = try? P256.Signing.ECDSASignature(derRepresentation: signature) else { return false }
        if algorithm.hashesMessage { return key.isValidSignature(parsed, for: input) }
        return key.isValidSignature(parsed, for: try RawSHA256Digest(input, algorithm))
    }
}

/// A digest the caller computed, for the digest algorithms: swift-crypto signs any
/// `Digest`, and SHA256Digest cannot be made from bytes.
struct RawSHA256Digest: Digest {
    static let byteCount = 32
    private let bytes: [UInt8]

    init(_ data: Data, _ algorithm: KeyAlgorithm) throws {
        guard algorithm.kind == .signature, data.count == Self.byteCount else { throw KeyCryptoError.param }
        bytes = Array(data)
    }

    func withUnsafeBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try bytes.withUnsafeBytes(body)
    }

    func makeIterator() -> IndexingIterator<[UInt8]> { bytes.makeIterator() }

    var description: String { "RawSHA256Digest" }
}
