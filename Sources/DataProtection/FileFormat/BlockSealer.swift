// Sealing and opening a request's blocks with a file key.
import CSodium
import Glibc

/// A file key made ready to seal and open blocks (libsodium), for the length of one
/// request. The value is shared read-only by the threads that seal one request's
/// blocks. With `state` (sodium_malloc'd, `BlockCipher.stateSize` bytes, 16-byte
/// aligned) an AES-256-GCM key is expanded once for all the request's blocks instead
/// of once per block; `finish()` wipes it.
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

    /// Runs `body` with a session for the calling thread.
    @inline(__always)
    public func withSession<R, E: Error>(_ body: (BlockSession) throws(E) -> R) throws(E) -> R {
        try body(BlockSession(sealer: self))
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

    /// Seals `plaintext` into `output` (`plaintext.count + BlockCipher.overhead` bytes)
    /// with the nonce already in `output`'s first `cipher.nonceSize` bytes; the rest of
    /// the nonce field is zeroed for AES-256-GCM.
    @inline(__always)
    public func seal(_ plaintext: UnsafeRawBufferPointer, additionalData: UnsafeRawPointer,
                     additionalDataCount: Int, into output: UnsafeMutableRawBufferPointer) {
        sealer.sodiumSeal(plaintext, additionalData: additionalData,
                          additionalDataCount: additionalDataCount, into: output)
    }

    /// Opens a sealed block into `output` (`sealed.count - BlockCipher.overhead` bytes);
    /// false when forged or damaged.
    @inline(__always)
    public func open(_ sealed: UnsafeRawBufferPointer, additionalData: UnsafeRawPointer,
                     additionalDataCount: Int, into output: UnsafeMutableRawBufferPointer) -> Bool {
        sealer.sodiumOpen(sealed, additionalData: additionalData,
                          additionalDataCount: additionalDataCount, into: output)
    }
}
