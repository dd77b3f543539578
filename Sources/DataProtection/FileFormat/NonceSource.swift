// Nonces for the data path.
import CSodium
import Glibc

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
                                            raw.start, key.pointer)
        }
    }
}
