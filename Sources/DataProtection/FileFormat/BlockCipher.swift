// The ciphers of file blocks, named by byte 6 of a backing file's header.
import CSodium
import Glibc

/// The cipher that seals a file's blocks, named by the cipher byte of its header
/// (dpfs(5)). Every block has the same 4,136-byte layout whatever the cipher: a 24-byte
/// nonce field ‖ ciphertext ‖ 16-byte tag, bound to file ID ‖ block number.
///
/// - XChaCha20-Poly1305 (1): the nonce field holds a random 192-bit nonce.
/// - AES-256-GCM (2), where the CPU has AES-NI and carry-less multiply (libsodium's
///   test): the first 12 bytes of the field hold a random 96-bit nonce, the other 12
///   are zero, and a block whose other 12 are not zero does not open (every stored
///   byte stays checked). Random 96-bit nonces limit one file key to 2^32 sealed
///   blocks (16 TiB of writes, rewrites included) for a collision chance below 2^-32,
///   the NIST SP 800-38D bound; a file's key lives as long as the file.
///
/// New files take AES-256-GCM when available (about 1.5× the speed of XChaCha20 here),
/// else XChaCha20-Poly1305; existing files keep the cipher their header names.
public enum BlockCipher: UInt8, Sendable, CaseIterable {
    case xchacha20Poly1305 = 1
    case aes256GCM = 2

    public static let nonceFieldSize = 24
    public static let tagSize = 16
    public static let overhead = nonceFieldSize + tagSize
    /// Bytes of key material one sealing context needs (the AES-256-GCM key schedule
    /// and hash key powers: libsodium's precomputed state).
    public static let stateSize = Int(crypto_aead_aes256gcm_statebytes())

    public static let aes256GCMAvailable: Bool = {
        precondition(Sodium.ready, "libsodium failed to initialise")
        return crypto_aead_aes256gcm_is_available() == 1
    }()

    /// The cipher for new files: AES-256-GCM where the CPU accelerates it. The
    /// environment variable DPFS_BLOCK_CIPHER (xchacha20poly1305 or aes256gcm) picks
    /// one for tests and benchmarks; AES-256-GCM is never picked without the hardware.
    public static let forNewFiles: BlockCipher = {
        let wanted = ProcessInfoLite.environment("DPFS_BLOCK_CIPHER")?.lowercased()
        if wanted == "xchacha20poly1305" { return .xchacha20Poly1305 }
        return aes256GCMAvailable ? .aes256GCM : .xchacha20Poly1305
    }()

    public var nonceSize: Int { self == .aes256GCM ? 12 : 24 }

    /// Whether this build and CPU can open blocks of this cipher.
    public var isUsable: Bool { self == .xchacha20Poly1305 || Self.aes256GCMAvailable }

    public var name: String { self == .aes256GCM ? "aes256gcm" : "xchacha20poly1305" }
}

/// getenv without Foundation (DataProtection keeps to libsodium and the C library).
enum ProcessInfoLite {
    static func environment(_ name: String) -> String? {
        guard let value = getenv(name) else { return nil }
        return String(cString: value)
    }
}
