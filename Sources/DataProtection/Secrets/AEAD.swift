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
/// The value is shared read-only by the threads that seal one request's blocks; each
/// thread seals and opens inside a session (`withSession`), which holds the cipher
/// contexts of that thread for as long as it runs and wipes them when it ends.
///
/// Two implementations give the same bytes: OpenSSL's libcrypto when the system has
/// it (LibCrypto: AES-256-GCM and ChaCha20-Poly1305 about twice libsodium's speed on
/// CPUs with vector AES), else libsodium. With libsodium and `state` (sodium_malloc'd,
/// `BlockCipher.stateSize` bytes, 16-byte aligned) an AES-256-GCM key is expanded once
/// for all the request's blocks instead of once per block; `finish()` wipes it. (Pass
/// no state when libcrypto is there: its sessions expand the key themselves.)
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

    /// A sealer that always uses libsodium and expands no key ahead.
    init(rawCipher cipher: BlockCipher, key: UnsafePointer<UInt8>) {
        self.cipher = cipher
        self.key = key
        self.state = nil
    }

    /// Wipes the expanded key, if any.
    public func finish() {
        if let state { sodium_memzero(state, BlockCipher.stateSize) }
    }

    /// Runs `body` with a session for the calling thread: its cipher contexts keyed for
    /// this sealer, wiped (and the key schedule with them) when `body` returns.
    @inline(__always)
    public func withSession<R>(_ body: (BlockSession) -> R) -> R {
        guard let crypto = LibCrypto.shared else { return body(BlockSession(sealer: self, contexts: nil)) }
        let contexts = LibCrypto.threadContexts()
        crypto.prepare(contexts, cipher: cipher, key: key)
        defer { crypto.wipe(contexts) }
        return body(BlockSession(sealer: self, contexts: contexts))
    }

    /// Runs `body` with a session that uses libsodium whatever the system has: for
    /// comparisons (Benchmarks/) and tests; the data path uses `withSession`.
    public func withSodiumSession<R>(_ body: (BlockSession) -> R) -> R {
        body(BlockSession(sealer: self, contexts: nil))
    }

    /// Seals one block in a session of its own (for the odd single block).
    public func seal(_ plaintext: UnsafeRawBufferPointer, additionalData: UnsafeRawPointer,
                     additionalDataCount: Int, into output: UnsafeMutableRawBufferPointer) {
        withSession { $0.seal(plaintext, additionalData: additionalData, additionalDataCount: additionalDataCount, into: output) }
    }

    /// Opens one block in a session of its own (for the odd single block).
    public func open(_ sealed: UnsafeRawBufferPointer, additionalData: UnsafeRawPointer,
                     additionalDataCount: Int, into output: UnsafeMutableRawBufferPointer) -> Bool {
        withSession { $0.open(sealed, additionalData: additionalData, additionalDataCount: additionalDataCount, into: output) }
    }

    /// Seals `plaintext` into `output` (`plaintext.count + BlockCipher.overhead` bytes)
    /// with the nonce already in `output`'s first `cipher.nonceSize` bytes; the rest of
    /// the nonce field is zeroed for AES-256-GCM.
    @inline(__always)
    func sodiumSeal(_ plaintext: UnsafeRawBufferPointer, additionalData: UnsafeRawPointer,
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
    func sodiumOpen(_ sealed: UnsafeRawBufferPointer, additionalData: UnsafeRawPointer,
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

/// One thread's use of a BlockSealer (see `BlockSealer.withSession`); not to be kept
/// or passed to another thread.
public struct BlockSession {
    let sealer: BlockSealer
    let contexts: LibCrypto.Contexts?

    /// Seals `plaintext` into `output` (`plaintext.count + BlockCipher.overhead` bytes)
    /// with the nonce already in `output`'s first `cipher.nonceSize` bytes; the rest of
    /// the nonce field is zeroed for AES-256-GCM.
    @inline(__always)
    public func seal(_ plaintext: UnsafeRawBufferPointer, additionalData: UnsafeRawPointer,
                     additionalDataCount: Int, into output: UnsafeMutableRawBufferPointer) {
        guard let contexts, let crypto = LibCrypto.shared else {
            return sealer.sodiumSeal(plaintext, additionalData: additionalData,
                                     additionalDataCount: additionalDataCount, into: output)
        }
        let out = output.start
        if sealer.cipher == .aes256GCM { memset(out + 12, 0, 12) }
        crypto.seal(contexts.encrypt, cipher: sealer.cipher, key: sealer.key, nonce: out,
                    plaintext: plaintext, additionalData: additionalData, additionalDataCount: additionalDataCount,
                    into: out + BlockCipher.nonceFieldSize)
    }

    /// Opens a sealed block into `output` (`sealed.count - BlockCipher.overhead` bytes);
    /// false when forged or damaged (and then `output` holds zeros, never unchecked
    /// plaintext).
    @inline(__always)
    public func open(_ sealed: UnsafeRawBufferPointer, additionalData: UnsafeRawPointer,
                     additionalDataCount: Int, into output: UnsafeMutableRawBufferPointer) -> Bool {
        guard let contexts, let crypto = LibCrypto.shared else {
            return sealer.sodiumOpen(sealed, additionalData: additionalData,
                                     additionalDataCount: additionalDataCount, into: output)
        }
        guard sealed.count >= BlockCipher.overhead, output.count == sealed.count - BlockCipher.overhead else { return false }
        let input = sealed.start
        if sealer.cipher == .aes256GCM {
            guard UnsafeRawPointer(input + 12).loadUnaligned(as: UInt64.self) == 0,
                  UnsafeRawPointer(input + 20).loadUnaligned(as: UInt32.self) == 0 else { return false }
        }
        return crypto.open(contexts.decrypt, cipher: sealer.cipher, key: sealer.key, nonce: input,
                           ciphertext: UnsafeRawBufferPointer(start: input + BlockCipher.nonceFieldSize, count: output.count),
                           tag: input + BlockCipher.nonceFieldSize + output.count,
                           additionalData: additionalData, additionalDataCount: additionalDataCount, into: output)
    }
}

/// OpenSSL's libcrypto, loaded at run time (dlopen) when the system has it: its
/// AES-256-GCM and ChaCha20-Poly1305 are about twice libsodium's speed on CPUs with
/// vector AES and AVX-512, and give the same bytes (RFC 8439 and SP 800-38D are
/// the same algorithms whoever computes them). XChaCha20-Poly1305 is ChaCha20-Poly1305
/// under the subkey HChaCha20(key, nonce[0..<16]) with nonce 0⁴ ‖ nonce[16..<24], the
/// construction libsodium implements; the subkey comes from libsodium. Not loaded when
/// DPFS_NO_LIBCRYPTO is set (then libsodium does all).
///
/// Key material: each thread has two cipher contexts (seal, open); a session keys them
/// and EVP_CIPHER_CTX_reset wipes them (OpenSSL cleanses the key schedule on reset)
/// when it ends, so no expanded key outlives the request that needed it.
public final class LibCrypto: @unchecked Sendable {
    // @unchecked: immutable after loading; the function pointers are thread-safe.
    public static let shared: LibCrypto? = {
        guard getenv("DPFS_NO_LIBCRYPTO") == nil else { return nil }
        return LibCrypto()
    }()

    typealias NewContext = @convention(c) () -> OpaquePointer?
    typealias FreeContext = @convention(c) (OpaquePointer?) -> Void
    typealias ResetContext = @convention(c) (OpaquePointer?) -> Int32
    typealias CipherType = @convention(c) () -> OpaquePointer?
    typealias CipherInit = @convention(c) (OpaquePointer?, OpaquePointer?, OpaquePointer?,
                                           UnsafePointer<UInt8>?, UnsafePointer<UInt8>?, Int32) -> Int32
    typealias CipherUpdate = @convention(c) (OpaquePointer?, UnsafeMutablePointer<UInt8>?, UnsafeMutablePointer<Int32>?,
                                             UnsafePointer<UInt8>?, Int32) -> Int32
    typealias CipherFinal = @convention(c) (OpaquePointer?, UnsafeMutablePointer<UInt8>?, UnsafeMutablePointer<Int32>?) -> Int32
    typealias Control = @convention(c) (OpaquePointer?, Int32, Int32, UnsafeMutableRawPointer?) -> Int32

    let newContext: NewContext
    let freeContext: FreeContext
    let resetContext: ResetContext
    let aes256GCM: OpaquePointer
    let chacha20Poly1305: OpaquePointer
    let cipherInit: CipherInit
    let cipherUpdate: CipherUpdate
    let cipherFinal: CipherFinal
    let control: Control

    static let getTag: Int32 = 0x10  // EVP_CTRL_AEAD_GET_TAG
    static let setTag: Int32 = 0x11  // EVP_CTRL_AEAD_SET_TAG

    private init?() {
        guard let handle = dlopen("libcrypto.so.3", RTLD_NOW | RTLD_LOCAL) else { return nil }
        func symbol<T>(_ name: String, as type: T.Type) -> T? {
            dlsym(handle, name).map { unsafeBitCast($0, to: type) }
        }
        guard let newContext = symbol("EVP_CIPHER_CTX_new", as: NewContext.self),
              let freeContext = symbol("EVP_CIPHER_CTX_free", as: FreeContext.self),
              let resetContext = symbol("EVP_CIPHER_CTX_reset", as: ResetContext.self),
              let aes = symbol("EVP_aes_256_gcm", as: CipherType.self),
              let chacha = symbol("EVP_chacha20_poly1305", as: CipherType.self),
              let cipherInit = symbol("EVP_CipherInit_ex", as: CipherInit.self),
              let cipherUpdate = symbol("EVP_CipherUpdate", as: CipherUpdate.self),
              let cipherFinal = symbol("EVP_CipherFinal_ex", as: CipherFinal.self),
              let control = symbol("EVP_CIPHER_CTX_ctrl", as: Control.self),
              let aesType = aes(), let chachaType = chacha() else { return nil }
        self.newContext = newContext
        self.freeContext = freeContext
        self.resetContext = resetContext
        self.aes256GCM = aesType
        self.chacha20Poly1305 = chachaType
        self.cipherInit = cipherInit
        self.cipherUpdate = cipherUpdate
        self.cipherFinal = cipherFinal
        self.control = control
        guard selfTest() else { return nil }
    }

    /// A thread's pair of contexts.
    final class Contexts {
        let encrypt: OpaquePointer
        let decrypt: OpaquePointer
        init(encrypt: OpaquePointer, decrypt: OpaquePointer) { self.encrypt = encrypt; self.decrypt = decrypt }
    }

    private static let threadKey: pthread_key_t = {
        var key = pthread_key_t()
        pthread_key_create(&key) { raw in
            guard let raw else { return }
            let contexts = Unmanaged<Contexts>.fromOpaque(raw).takeRetainedValue()
            LibCrypto.shared?.freeContext(contexts.encrypt)
            LibCrypto.shared?.freeContext(contexts.decrypt)
        }
        return key
    }()

    /// The calling thread's contexts, made on first use and freed when it exits.
    static func threadContexts() -> Contexts {
        if let raw = pthread_getspecific(threadKey) {
            return Unmanaged<Contexts>.fromOpaque(raw).takeUnretainedValue()
        }
        guard let crypto = shared, let encrypt = crypto.newContext(), let decrypt = crypto.newContext() else {
            fatalError("EVP_CIPHER_CTX_new failed: out of memory")
        }
        let contexts = Contexts(encrypt: encrypt, decrypt: decrypt)
        pthread_setspecific(threadKey, Unmanaged.passRetained(contexts).toOpaque())
        return contexts
    }

    /// Sets both contexts to `cipher`, keyed with `key` for AES-256-GCM (XChaCha20 keys
    /// every block with its own subkey).
    @inline(__always)
    func prepare(_ contexts: Contexts, cipher: BlockCipher, key: UnsafePointer<UInt8>) {
        let type = cipher == .aes256GCM ? aes256GCM : chacha20Poly1305
        let blockKey = cipher == .aes256GCM ? key : nil
        _ = cipherInit(contexts.encrypt, type, nil, blockKey, nil, 1)
        _ = cipherInit(contexts.decrypt, type, nil, blockKey, nil, 0)
    }

    /// Wipes both contexts (key schedule included).
    @inline(__always)
    func wipe(_ contexts: Contexts) {
        _ = resetContext(contexts.encrypt)
        _ = resetContext(contexts.decrypt)
    }

    /// Runs `body` with the block key and 12-byte nonce of one block: for AES-256-GCM
    /// the file key (already in the context: nil) and the stored nonce, for XChaCha20 the
    /// HChaCha20 subkey (on the stack, wiped after) and 0⁴ ‖ nonce[16..<24].
    @inline(__always)
    private func withBlockKey<R>(_ cipher: BlockCipher, key: UnsafePointer<UInt8>, nonce: UnsafePointer<UInt8>,
                                 _ body: (UnsafePointer<UInt8>?, UnsafePointer<UInt8>) -> R) -> R {
        if cipher == .aes256GCM { return body(nil, nonce) }
        return withUnsafeTemporaryAllocation(byteCount: 48, alignment: 16) { scratch in
            let subkey = scratch.baseAddress!.assumingMemoryBound(to: UInt8.self)
            let shortNonce = subkey + 32
            _ = crypto_core_hchacha20(subkey, nonce, key, nil)
            memset(shortNonce, 0, 4)
            memcpy(shortNonce + 4, nonce + 16, 8)
            defer { sodium_memzero(subkey, 32) }
            return body(UnsafePointer(subkey), UnsafePointer(shortNonce))
        }
    }

    @inline(__always)
    func seal(_ context: OpaquePointer, cipher: BlockCipher, key: UnsafePointer<UInt8>, nonce: UnsafePointer<UInt8>,
              plaintext: UnsafeRawBufferPointer, additionalData: UnsafeRawPointer, additionalDataCount: Int,
              into body: UnsafeMutablePointer<UInt8>) {
        withBlockKey(cipher, key: key, nonce: nonce) { blockKey, iv in
            var length: Int32 = 0
            _ = cipherInit(context, nil, nil, blockKey, iv, 1)
            _ = cipherUpdate(context, nil, &length, additionalData.assumingMemoryBound(to: UInt8.self), Int32(additionalDataCount))
            _ = cipherUpdate(context, body, &length, plaintext.start, Int32(plaintext.count))
            _ = cipherFinal(context, body + Int(length), &length)
            _ = control(context, Self.getTag, Int32(BlockCipher.tagSize), body + plaintext.count)
        }
    }

    @inline(__always)
    func open(_ context: OpaquePointer, cipher: BlockCipher, key: UnsafePointer<UInt8>, nonce: UnsafePointer<UInt8>,
              ciphertext: UnsafeRawBufferPointer, tag: UnsafePointer<UInt8>,
              additionalData: UnsafeRawPointer, additionalDataCount: Int,
              into output: UnsafeMutableRawBufferPointer) -> Bool {
        let ok = withBlockKey(cipher, key: key, nonce: nonce) { blockKey, iv -> Bool in
            var length: Int32 = 0
            guard cipherInit(context, nil, nil, blockKey, iv, 0) == 1,
                  cipherUpdate(context, nil, &length, additionalData.assumingMemoryBound(to: UInt8.self), Int32(additionalDataCount)) == 1,
                  cipherUpdate(context, output.start, &length, ciphertext.start, Int32(ciphertext.count)) == 1,
                  control(context, Self.setTag, Int32(BlockCipher.tagSize), UnsafeMutableRawPointer(mutating: tag)) == 1
            else { return false }
            return cipherFinal(context, output.start + Int(length), &length) == 1
        }
        // OpenSSL writes plaintext before it checks the tag: none of it may stay.
        if !ok { output.initializeMemory(as: UInt8.self, repeating: 0) }
        return ok
    }

    /// Checks, once, that this libcrypto gives libsodium's bytes for both ciphers.
    private func selfTest() -> Bool {
        guard let encrypt = newContext(), let decrypt = newContext() else { return false }
        let contexts = Contexts(encrypt: encrypt, decrypt: decrypt)
        defer { freeContext(encrypt); freeContext(decrypt) }
        let keyBuffer = UnsafeMutablePointer<UInt8>.allocate(capacity: 32)
        defer { keyBuffer.deallocate() }
        for i in 0..<32 { keyBuffer[i] = UInt8(i &* 7 &+ 1) }
        let key = UnsafePointer(keyBuffer)
        var nonce = [UInt8](repeating: 0, count: 24)
        var plain = [UInt8](repeating: 0, count: 100), ad = [UInt8](repeating: 0, count: 24)
        for i in 0..<12 { nonce[i] = UInt8(i &* 13 &+ 5) }
        for i in 0..<100 { plain[i] = UInt8(truncatingIfNeeded: i &* 31) }
        for i in 0..<24 { ad[i] = UInt8(i) }
        for cipher in BlockCipher.allCases where cipher.isUsable {
            if cipher == .xchacha20Poly1305 { for i in 12..<24 { nonce[i] = UInt8(i &* 3) } } else { for i in 12..<24 { nonce[i] = 0 } }
            var mine = [UInt8](repeating: 0, count: 100 + BlockCipher.overhead)
            var theirs = mine
            mine.replaceSubrange(0..<24, with: nonce)
            theirs.replaceSubrange(0..<24, with: nonce)
            // libsodium's bytes, without a BlockSealer (its initialiser asks for
            // LibCrypto.shared, which this runs inside of).
            let sealer = BlockSealer(rawCipher: cipher, key: key)
            prepare(contexts, cipher: cipher, key: key)
            plain.withUnsafeBytes { p in ad.withUnsafeBytes { a in
                mine.withUnsafeMutableBytes { m in
                    seal(encrypt, cipher: cipher, key: key, nonce: m.start, plaintext: p, additionalData: a.baseAddress!,
                         additionalDataCount: 24, into: m.start + 24)
                }
                theirs.withUnsafeMutableBytes { t in
                    sealer.sodiumSeal(p, additionalData: a.baseAddress!, additionalDataCount: 24, into: t)
                }
            } }
            var opened = [UInt8](repeating: 0, count: 100)
            let opens = mine.withUnsafeBytes { m in ad.withUnsafeBytes { a in opened.withUnsafeMutableBytes { o in
                open(decrypt, cipher: cipher, key: key, nonce: m.start, ciphertext: UnsafeRawBufferPointer(rebasing: m[24..<124]),
                     tag: m.start + 124, additionalData: a.baseAddress!, additionalDataCount: 24, into: o)
            } } }
            wipe(contexts)
            guard mine == theirs, opens, opened == plain else { return false }
        }
        return true
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
