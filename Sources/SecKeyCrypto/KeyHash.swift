// The hashes SecKey's algorithm names carry, on swift-crypto, and the ANSI X9.63 KDF
// that ECDH and ECIES derive keys with over them. swift-crypto has no SHA-224: its
// size is known here, not the hash (KeyAlgorithm.isAvailable).
import Crypto
import Foundation

public enum KeyHash: String, Sendable, CaseIterable {
    case sha1 = "SHA1", sha224 = "SHA224", sha256 = "SHA256", sha384 = "SHA384", sha512 = "SHA512"

    public var byteCount: Int {
        switch self {
        case .sha1: 20
        case .sha224: 28
        case .sha256: 32
        case .sha384: 48
        case .sha512: 64
        }
    }

    /// KeyCryptoError.unavailable for SHA-224.
    public func digest(of message: Data) throws -> Data { try digest([message]) }

    /// The KDF of ANSI X9.63 (SEC 1): Hash(secret || counter || sharedInfo) for the
    /// counter 1, 2, … as four big-endian bytes, concatenated and cut to `count`.
    public func x963(_ secret: Data, sharedInfo: Data, count: Int) throws -> Data {
        guard count > 0, count / byteCount < Int(UInt32.max) else { throw KeyCryptoError.param }
        var output = Data(capacity: count + byteCount)
        var counter: UInt32 = 1
        while output.count < count {
            output += try digest([secret, Data(withUnsafeBytes(of: counter.bigEndian, Array.init)), sharedInfo])
            counter += 1
        }
        return Data(output.prefix(count))
    }

    private func digest(_ parts: [Data]) throws -> Data {
        switch self {
        case .sha1: return Self.digest(Insecure.SHA1.self, parts)
        case .sha224: throw KeyCryptoError.unavailable
        case .sha256: return Self.digest(SHA256.self, parts)
        case .sha384: return Self.digest(SHA384.self, parts)
        case .sha512: return Self.digest(SHA512.self, parts)
        }
    }

    private static func digest<H: HashFunction>(_: H.Type, _ parts: [Data]) -> Data {
        var hasher = H()
        for part in parts { hasher.update(data: part) }
        return Data(hasher.finalize())
    }
}
