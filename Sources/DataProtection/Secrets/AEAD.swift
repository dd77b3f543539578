// Authenticated encryption of short records (wrapped keys, item secrets):
// XChaCha20-Poly1305 with a random 192-bit nonce stored in front of the ciphertext.
import CSodium
import Glibc

public enum AEAD {
    public static let keySize = Int(crypto_aead_xchacha20poly1305_ietf_KEYBYTES)
    public static let nonceSize = Int(crypto_aead_xchacha20poly1305_ietf_NPUBBYTES)
    public static let tagSize = Int(crypto_aead_xchacha20poly1305_ietf_ABYTES)
    public static let overhead = nonceSize + tagSize

    /// Seals `plaintext` into `output` (nonce ‖ ciphertext ‖ tag); `output.count` must be
    /// `plaintext.count + overhead`. `nonce`: `nonceSize` fresh random bytes, or nil for
    /// the system generator's.
    public static func seal(_ plaintext: UnsafeRawBufferPointer, additionalData: UnsafeRawBufferPointer,
                            key: UnsafePointer<UInt8>, nonce: UnsafeRawBufferPointer? = nil,
                            into output: UnsafeMutableRawBufferPointer) {
        precondition(output.count == plaintext.count + overhead)
        let out = output.start
        if let nonce {
            precondition(nonce.count == nonceSize)
            out.update(from: nonce.start, count: nonceSize)
        } else {
            randombytes_buf(out, nonceSize)
        }
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

    /// Seals a secret and returns the public sealed record (`nonce` as above).
    public static func seal(_ secret: SecureBuffer, additionalData: [UInt8], key: SecureBuffer,
                            nonce: UnsafeRawBufferPointer? = nil) -> [UInt8] {
        var sealed = [UInt8](repeating: 0, count: secret.count + overhead)
        additionalData.withUnsafeBytes { ad in
            sealed.withUnsafeMutableBytes { seal(secret.bytes, additionalData: ad, key: key.pointer, nonce: nonce, into: $0) }
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
