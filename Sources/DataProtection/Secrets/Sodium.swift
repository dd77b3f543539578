// Owns libsodium's one-time initialisation and its random generator.
import CSodium

public enum Sodium {
    /// Initialises libsodium once; safe to call from any thread, any number of times.
    public static let ready: Bool = sodium_init() >= 0

    public static func randomBytes(_ count: Int) -> [UInt8] {
        precondition(ready, "libsodium failed to initialise")
        var bytes = [UInt8](repeating: 0, count: count)
        bytes.withUnsafeMutableBytes { randombytes_buf($0.start, $0.count) }
        return bytes
    }

    public static func fillRandom(_ buffer: UnsafeMutableRawBufferPointer) {
        precondition(ready, "libsodium failed to initialise")
        randombytes_buf(buffer.start, buffer.count)
    }

    /// Constant-time comparison of two byte ranges of equal length.
    public static func equal(_ a: UnsafeRawBufferPointer, _ b: UnsafeRawBufferPointer) -> Bool {
        a.count == b.count && sodium_memcmp(a.start, b.start, a.count) == 0
    }

    /// BLAKE2b of `message`, optionally keyed; `output` decides the digest length (16...64).
    public static func hash(_ message: UnsafeRawBufferPointer, key: UnsafeRawBufferPointer? = nil,
                            into output: UnsafeMutableRawBufferPointer) {
        _ = crypto_generichash(output.start, output.count,
                               message.start,
                               UInt64(message.count),
                               key?.start, key?.count ?? 0)
    }

    /// ChaCha20's keystream under a 32-byte `key` (nonce zero): a pseudorandom
    /// expansion of a digest, not encryption, so the key is not secret.
    public static func keystream(key: UnsafeRawBufferPointer, into output: UnsafeMutableRawBufferPointer) {
        precondition(key.count == Int(crypto_stream_chacha20_KEYBYTES))
        let nonce = [UInt8](repeating: 0, count: Int(crypto_stream_chacha20_NONCEBYTES))
        _ = crypto_stream_chacha20(output.start, UInt64(output.count), nonce, key.start)
    }
}
