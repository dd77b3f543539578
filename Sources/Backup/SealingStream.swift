// Writes a backup's byte stream sealed with libsodium's secretstream
// (XChaCha20-Poly1305): the clear header, then chunks of `chunkSize` plaintext bytes,
// each authenticated and numbered by the stream's state, the last one tagged FINAL,
// so a reader detects a chunk altered, dropped, reordered or cut off. Plaintext
// collects in locked memory; only ciphertext reaches the file.
import CSodium
import DataProtection
import DPFSProtocol
import Glibc

public final class SealingStream {
    public static let chunkSize = 64 << 10
    static let overhead = Int(crypto_secretstream_xchacha20poly1305_ABYTES)

    private let fd: Int32
    private let state: SecureBuffer
    private let plain = SecureBuffer(count: chunkSize)
    private var filled = 0
    private var cipher = [UInt8](repeating: 0, count: chunkSize + overhead)
    /// The header, bound to the first chunk as associated data; nil once it is written.
    private var headerAD: [UInt8]?
    private var finished = false
    /// Plaintext bytes taken so far, for progress reports.
    public private(set) var plaintextBytes: UInt64 = 0

    /// Writes the header to `fd` under a key stretched from `password`.
    public init(fd: Int32, password: some SecretBytes, header: BackupHeader = .fresh()) throws {
        self.fd = fd
        state = SecureBuffer(count: crypto_secretstream_xchacha20poly1305_statebytes())
        let key = try BackupKey.derive(password: password, header: header)
        defer { key.wipe() }
        var header = header
        header.keyCheck = BackupKey.check(key)
        header.streamHeader.withUnsafeMutableBytes { streamHeader in
            _ = crypto_secretstream_xchacha20poly1305_init_push(statePointer, streamHeader.start, key.pointer)
        }
        let encoded = header.encoded
        headerAD = encoded
        try encoded.withUnsafeBytes { try Self.writeAll(fd, $0) }
    }

    private var statePointer: UnsafeMutablePointer<crypto_secretstream_xchacha20poly1305_state> {
        UnsafeMutableRawPointer(state.mutableBytes.start).assumingMemoryBound(to: crypto_secretstream_xchacha20poly1305_state.self)
    }

    public func write(_ bytes: UnsafeRawBufferPointer) throws {
        var offset = 0
        while offset < bytes.count {
            // A full chunk is sealed only when more follows: the last one gets FINAL.
            if filled == Self.chunkSize { try seal(final: false) }
            let n = min(Self.chunkSize - filled, bytes.count - offset)
            (plain.mutableBytes.start + filled).update(from: bytes.start + offset, count: n)
            filled += n
            offset += n
        }
        plaintextBytes += UInt64(bytes.count)
    }

    public func write(_ bytes: [UInt8]) throws {
        try bytes.withUnsafeBytes { (buffer) in try write(buffer) }
    }

    /// Seals what is left as the FINAL chunk (possibly empty) and syncs the file.
    public func finish() throws {
        guard !finished else { return }
        try seal(final: true)
        finished = true
        guard fsync(fd) == 0 else { throw BackupError.io("cannot sync the backup: \(String(cString: strerror(errno)))") }
    }

    private func seal(final: Bool) throws {
        var length: UInt64 = 0
        let tag = final ? crypto_secretstream_xchacha20poly1305_tag_final() : crypto_secretstream_xchacha20poly1305_tag_message()
        let ad = headerAD ?? []
        cipher.withUnsafeMutableBytes { output in
            ad.withUnsafeBytes { ad in
                _ = crypto_secretstream_xchacha20poly1305_push(statePointer, output.start, &length, plain.bytes.start,
                                                               UInt64(filled), ad.baseAddress == nil ? nil : ad.start,
                                                               UInt64(ad.count), tag)
            }
        }
        headerAD = nil
        sodium_memzero(plain.mutableBytes.start, filled)
        filled = 0
        try cipher.withUnsafeBytes { (buffer) in
            try Self.writeAll(fd, UnsafeRawBufferPointer(rebasing: buffer[0..<Int(length)]))
        }
    }

    static func writeAll(_ fd: Int32, _ bytes: UnsafeRawBufferPointer) throws {
        var done = 0
        while done < bytes.count {
            let n = Glibc.write(fd, bytes.start + done, bytes.count - done)
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { throw BackupError.io("cannot write the backup: \(String(cString: strerror(errno)))") }
            done += n
        }
    }
}
