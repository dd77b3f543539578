// Reads a backup's byte stream (SealingStream): checks the header, stretches the
// password, and opens chunk after chunk into locked memory. A chunk that fails its
// tag, a stream that ends before its FINAL chunk, and bytes after it are each refused.
import CSodium
import DataProtection
import DPFSProtocol
import Glibc

public final class OpeningStream {
    private let fd: Int32
    private let state: SecureBuffer
    /// The stretched key, kept for `rewind`.
    private let key: SecureBuffer
    private let header: [UInt8]
    private let plain = SecureBuffer(count: SealingStream.chunkSize)
    private var available = 0
    private var position = 0
    private var cipher = [UInt8](repeating: 0, count: SealingStream.chunkSize + SealingStream.overhead)
    private var headerAD: [UInt8]?
    private var chunks = 0
    /// Where content pieces are read (BackupRecord), made on first use.
    var pieceBuffer: SecureBuffer?
    public private(set) var reachedFinal = false
    /// The header's format version: what the records may hold.
    public let version: UInt16
    /// Ciphertext bytes read so far (header included), for progress reports.
    public private(set) var fileBytes: UInt64 = 0

    /// Reads the header from `fd` (at its start) and derives the key.
    public init(fd: Int32, password: some SecretBytes) throws {
        self.fd = fd
        var headerBytes = [UInt8](repeating: 0, count: BackupHeader.size)
        let got = try headerBytes.withUnsafeMutableBytes { (buffer) in try Self.readFully(fd, buffer) }
        guard got == BackupHeader.size else { throw got >= 8 && Array(headerBytes[0..<8]) == BackupHeader.magic ? BackupError.truncated : BackupError.notABackup }
        let header = try BackupHeader(parsing: headerBytes)
        state = SecureBuffer(count: crypto_secretstream_xchacha20poly1305_statebytes())
        key = try BackupKey.derive(password: password, header: header)
        guard BackupKey.check(key) == header.keyCheck else { throw BackupError.wrongPassword }
        self.header = headerBytes
        version = header.version
        try start(header)
    }

    deinit { key.wipe() }

    private func start(_ header: BackupHeader) throws {
        let rc = header.streamHeader.withUnsafeBytes { streamHeader in
            crypto_secretstream_xchacha20poly1305_init_pull(statePointer, streamHeader.start, key.pointer)
        }
        guard rc == 0 else { throw BackupError.damaged("its stream header is invalid") }
        headerAD = self.header
        available = 0
        position = 0
        chunks = 0
        reachedFinal = false
        fileBytes = UInt64(self.header.count)
    }

    /// Back to the first record, with the key already stretched: restore reads the
    /// whole backup once to check it, then again to apply it. The header is read
    /// again and must not have changed.
    public func rewind() throws {
        guard lseek(fd, 0, SEEK_SET) == 0 else { throw BackupError.io("cannot read the backup again: \(String(cString: strerror(errno)))") }
        var again = [UInt8](repeating: 0, count: BackupHeader.size)
        let got = try again.withUnsafeMutableBytes { (buffer) in try Self.readFully(fd, buffer) }
        guard got == again.count, again == header else { throw BackupError.damaged("it changed while it was read") }
        try start(try BackupHeader(parsing: again))
    }

    private var statePointer: UnsafeMutablePointer<crypto_secretstream_xchacha20poly1305_state> {
        UnsafeMutableRawPointer(state.mutableBytes.start).assumingMemoryBound(to: crypto_secretstream_xchacha20poly1305_state.self)
    }

    /// Fills `buffer` from the stream; a stream that ends first is damaged (its records
    /// promised more).
    public func read(into buffer: UnsafeMutableRawBufferPointer) throws {
        var offset = 0
        while offset < buffer.count {
            if position == available { try nextChunk() }
            let n = min(available - position, buffer.count - offset)
            (buffer.start + offset).update(from: plain.bytes.start + position, count: n)
            position += n
            offset += n
        }
    }

    public func readBytes(_ count: Int) throws -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: count)
        try bytes.withUnsafeMutableBytes { (buffer) in try read(into: buffer) }
        return bytes
    }

    /// After the last record: the stream must end here, with its FINAL chunk, and the
    /// file right after it.
    public func expectEnd() throws {
        guard position == available else { throw BackupError.damaged("data follows its end record") }
        while !reachedFinal {
            try nextChunk()
            guard available == 0 else { throw BackupError.damaged("data follows its end record") }
        }
    }

    private func nextChunk() throws {
        guard !reachedFinal else { throw BackupError.damaged("its records end early") }
        let got = try cipher.withUnsafeMutableBytes { (buffer) in try Self.readFully(fd, buffer) }
        fileBytes += UInt64(got)
        guard got >= SealingStream.overhead else { throw BackupError.truncated }
        var length: UInt64 = 0
        var tag: UInt8 = 0
        let ad = headerAD ?? []
        let rc = cipher.withUnsafeBytes { input in
            ad.withUnsafeBytes { ad in
                crypto_secretstream_xchacha20poly1305_pull(statePointer, plain.mutableBytes.start, &length, &tag,
                                                           input.start, UInt64(got), ad.baseAddress == nil ? nil : ad.start,
                                                           UInt64(ad.count))
            }
        }
        guard rc == 0 else {
            // The key is right (the header's check): the chunk was altered, or it is the
            // last one and the file was cut inside it or had bytes added after it.
            if got < cipher.count { throw BackupError.damaged("its last chunk fails authentication (cut short, or bytes added after it)") }
            throw BackupError.damaged("chunk \(chunks) fails authentication")
        }
        headerAD = nil
        chunks += 1
        available = Int(length)
        position = 0
        if tag == crypto_secretstream_xchacha20poly1305_tag_final() {
            reachedFinal = true
            var extra: UInt8 = 0
            guard Glibc.read(fd, &extra, 1) == 0 else { throw BackupError.trailingData }
        } else if got < cipher.count {
            // A full-size chunk is the only kind that may be followed by another.
            throw BackupError.truncated
        }
    }

    /// Reads until `buffer` is full or the file ends; the count read.
    static func readFully(_ fd: Int32, _ buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        var done = 0
        while done < buffer.count {
            let n = Glibc.read(fd, buffer.start + done, buffer.count - done)
            if n < 0 && errno == EINTR { continue }
            if n < 0 { throw BackupError.io("cannot read the backup: \(String(cString: strerror(errno)))") }
            if n == 0 { break }
            done += n
        }
        return done
    }
}
