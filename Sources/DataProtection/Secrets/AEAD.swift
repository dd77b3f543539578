// Authenticated encryption of short records (wrapped keys, item secrets):
// XChaCha20-Poly1305 with a random 192-bit nonce stored in front of the ciphertext.
// Below it, the ciphers of file blocks (BlockCipher), a request's sealing context
// (BlockSealer) and the nonce generator of the data path (NonceSource).
import CSodium
import Glibc

public enum AEAD {
    public static let keySize = Int(crypto_aead_xchacha20poly1305_ietf_KEYBYTES)
    public static let nonceSize = Int(crypto_aead_xchacha20poly1305_ietf_NPUBBYTES)
    public static let tagSize = Int(crypto_aead_xchacha20poly1305_ietf_ABYTES)
    public static let overhead = nonceSize + tagSize

    /// Seals `plaintext` into `output` (nonce ‖ ciphertext ‖ tag); `output.count` must be
    /// `plaintext.count + overhead`.
    public static func seal(_ plaintext: UnsafeRawBufferPointer, additionalData: UnsafeRawBufferPointer,
                            key: UnsafePointer<UInt8>, into output: UnsafeMutableRawBufferPointer) {
        precondition(output.count == plaintext.count + overhead)
        let out = output.start
        randombytes_buf(out, nonceSize)
        var written: UInt64 = 0
        _ = crypto_aead_xchacha20poly1305_ietf_encrypt(
            out + nonceSize, &written,
            plaintext.start, UInt64(plaintext.count),
            additionalData.start, UInt64(additionalData.count),
            nil, out, key)
    }

    /// Opens a sealed record into `output` (`sealed.count - overhead` bytes); false when forged.
    public static func open(_ sealed: UnsafeRawBufferPointer, additionalData: UnsafeRawBufferPointer,
                            key: UnsafePointer<UInt8>, into output: UnsafeMutableRawBufferPointer) -> Bool {
        guard sealed.count >= overhead, output.count == sealed.count - overhead,
              let input = sealed.baseAddress?.assumingMemoryBound(to: UInt8.self) else { return false }
        var written: UInt64 = 0
        return crypto_aead_xchacha20poly1305_ietf_decrypt(
            output.start, &written, nil,
            input + nonceSize, UInt64(sealed.count - nonceSize),
            additionalData.start, UInt64(additionalData.count),
            input, key) == 0
    }

    /// Seals a secret and returns the public sealed record.
    public static func seal(_ secret: SecureBuffer, additionalData: [UInt8], key: SecureBuffer) -> [UInt8] {
        var sealed = [UInt8](repeating: 0, count: secret.count + overhead)
        additionalData.withUnsafeBytes { ad in
            sealed.withUnsafeMutableBytes { seal(secret.bytes, additionalData: ad, key: key.pointer, into: $0) }
        }
        return sealed
    }

    /// Opens a sealed record straight into locked memory; nil when the key or data is wrong.
    public static func open(_ sealed: [UInt8], additionalData: [UInt8], key: SecureBuffer) -> SecureBuffer? {
        guard sealed.count >= overhead else { return nil }
        let secret = SecureBuffer(count: sealed.count - overhead)
        let ok = sealed.withUnsafeBytes { input in
            additionalData.withUnsafeBytes { ad in
                open(input, additionalData: ad, key: key.pointer, into: secret.mutableBytes)
            }
        }
        return ok ? secret : nil
    }
}

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

/// A file key made ready to seal and open blocks, for the length of one request.
/// With `state` (sodium_malloc'd, `BlockCipher.stateSize` bytes, 16-byte aligned) an
/// AES-256-GCM key is expanded once for all the request's blocks instead of once per
/// block; `finish()` wipes it. Without it every block expands the key on the stack.
/// The value is shared read-only by the threads that seal one request's blocks.
public struct BlockSealer: @unchecked Sendable {
    // @unchecked: the pointers are read only; their owner outlives every use.
    public let cipher: BlockCipher
    let key: UnsafePointer<UInt8>
    let state: UnsafeMutablePointer<crypto_aead_aes256gcm_state>?

    public init(cipher: BlockCipher, key: UnsafePointer<UInt8>, state: UnsafeMutableRawPointer? = nil) {
        self.cipher = cipher
        self.key = key
        if cipher == .aes256GCM, BlockCipher.aes256GCMAvailable, let state {
            precondition(UInt(bitPattern: state) % 16 == 0, "AES-GCM state must be 16-byte aligned")
            let typed = state.bindMemory(to: crypto_aead_aes256gcm_state.self, capacity: 1)
            crypto_aead_aes256gcm_beforenm(typed, key)
            self.state = typed
        } else {
            self.state = nil
        }
    }

    /// Wipes the expanded key, if any.
    public func finish() {
        if let state { sodium_memzero(state, BlockCipher.stateSize) }
    }

    /// Seals `plaintext` into `output` (`plaintext.count + BlockCipher.overhead` bytes)
    /// with the nonce already in `output`'s first `cipher.nonceSize` bytes; the rest of
    /// the nonce field is zeroed for AES-256-GCM.
    @inline(__always)
    public func seal(_ plaintext: UnsafeRawBufferPointer, additionalData: UnsafeRawPointer,
                     additionalDataCount: Int, into output: UnsafeMutableRawBufferPointer) {
        let out = output.start
        let body = out + BlockCipher.nonceFieldSize
        var written: UInt64 = 0
        let ad = additionalData.assumingMemoryBound(to: UInt8.self)
        switch cipher {
        case .xchacha20Poly1305:
            _ = crypto_aead_xchacha20poly1305_ietf_encrypt(
                body, &written, plaintext.start, UInt64(plaintext.count),
                ad, UInt64(additionalDataCount), nil, out, key)
        case .aes256GCM:
            memset(out + 12, 0, 12)
            if let state {
                _ = crypto_aead_aes256gcm_encrypt_afternm(
                    body, &written, plaintext.start, UInt64(plaintext.count),
                    ad, UInt64(additionalDataCount), nil, out, state)
            } else {
                _ = crypto_aead_aes256gcm_encrypt(
                    body, &written, plaintext.start, UInt64(plaintext.count),
                    ad, UInt64(additionalDataCount), nil, out, key)
            }
        }
    }

    /// Opens a sealed block into `output` (`sealed.count - BlockCipher.overhead` bytes);
    /// false when forged or damaged.
    @inline(__always)
    public func open(_ sealed: UnsafeRawBufferPointer, additionalData: UnsafeRawPointer,
                     additionalDataCount: Int, into output: UnsafeMutableRawBufferPointer) -> Bool {
        guard sealed.count >= BlockCipher.overhead, output.count == sealed.count - BlockCipher.overhead else { return false }
        let input = sealed.start
        let body = input + BlockCipher.nonceFieldSize
        let bodyCount = UInt64(sealed.count - BlockCipher.nonceFieldSize)
        let ad = additionalData.assumingMemoryBound(to: UInt8.self)
        var written: UInt64 = 0
        switch cipher {
        case .xchacha20Poly1305:
            return crypto_aead_xchacha20poly1305_ietf_decrypt(
                output.start, &written, nil, body, bodyCount, ad, UInt64(additionalDataCount), input, key) == 0
        case .aes256GCM:
            guard BlockCipher.aes256GCMAvailable,
                  UnsafeRawPointer(input + 12).loadUnaligned(as: UInt64.self) == 0,
                  UnsafeRawPointer(input + 20).loadUnaligned(as: UInt32.self) == 0 else { return false }
            if let state {
                return crypto_aead_aes256gcm_decrypt_afternm(
                    output.start, &written, nil, body, bodyCount, ad, UInt64(additionalDataCount), input, state) == 0
            }
            return crypto_aead_aes256gcm_decrypt(
                output.start, &written, nil, body, bodyCount, ad, UInt64(additionalDataCount), input, key) == 0
        }
    }
}

/// Nonces for sealing blocks, from a ChaCha20 keystream under a random 256-bit key in
/// locked memory, a fresh stream nonce per call: one call fills the nonce fields of a
/// whole request, where the system's generator would cost a system call per block.
/// The output is indistinguishable from random (it is how getrandom itself works), so
/// the collision bounds of random nonces hold. Not thread-safe: one per I/O buffer.
public final class NonceSource: @unchecked Sendable {
    // @unchecked: used by one request at a time (its owner, a pooled I/O buffer).
    private let key = SecureBuffer.random(count: Int(crypto_stream_chacha20_ietf_KEYBYTES))
    private var counter: UInt64 = 0

    public init() {}

    /// Fills `output` with fresh random-looking bytes.
    public func fill(_ output: UnsafeMutableRawPointer, count: Int) {
        counter &+= 1
        var nonce = (counter.littleEndian, UInt32(0))
        withUnsafeBytes(of: &nonce) { raw in
            _ = crypto_stream_chacha20_ietf(output.assumingMemoryBound(to: UInt8.self), UInt64(count),
                                            raw.baseAddress!.assumingMemoryBound(to: UInt8.self), key.pointer)
        }
    }
}
