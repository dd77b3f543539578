// The control socket's wire format (dpfs(5)): every message is one frame,
//   "DPFC" | version u16 | reserved u16 | body length u32 | secret length u32 | body | secrets
// all integers big-endian; the body is one typed message as a WireValue. Secrets
// (passcodes, keychain item data) travel apart from the body so that they
// go from locked memory on one side to locked memory on the other (SecretBytes), never
// through a Swift String or Data. The secret section is a list of u32-length-prefixed
// secrets.
import Foundation
import Glibc

public enum ControlProtocol {
    public static let magic: [UInt8] = Array("DPFC".utf8)
    public static let version: UInt16 = 2
    static let headerSize = 16
    public static let maxBodySize = 16 << 20
    /// The most data a keychain item may hold (it travels as a secret).
    public static let maxItemDataSize = 64 << 10
    /// The most bytes (UTF-8) one attribute value of a stored keychain item may have.
    /// An item has some thirty attributes at most, so that any item the store takes,
    /// every value at its longest, comes back in a reply well within maxBodySize.
    public static let maxAttributeSize = 64 << 10
    /// The secret section: one item's data, or two passcodes, with their length prefixes.
    public static let maxSecretSize = maxItemDataSize + 8192
}

public enum FrameError: Error, CustomStringConvertible {
    case closed
    case io(Int32)
    case badMagic
    case unsupportedVersion(UInt16)
    case tooLarge(Int)
    case malformed(String)

    /// Why a frame whose sender stopped part way is malformed.
    static let truncatedFrame = "truncated frame"

    public var description: String {
        switch self {
        case .closed: return "the connection closed"
        case .io(let code): return "socket error: \(String(cString: strerror(code)))"
        case .badMagic: return "not a dpfs control frame"
        case .unsupportedVersion(let v): return "control protocol version \(v) is not supported (this daemon speaks \(ControlProtocol.version))"
        case .tooLarge(let n): return "frame of \(n) bytes is too large"
        case .malformed(let why): return "malformed request: \(why)"
        }
    }
}

public struct Frame<Secret: SecretBytes> {
    public var body: [UInt8]
    public var secrets: [Secret]

    public init(body: [UInt8], secrets: [Secret] = []) {
        self.body = body
        self.secrets = secrets
    }

    /// Sends the frame in one gathered write, so the peer wakes once for it, not once
    /// per part; the secrets go from their locked memory straight to the socket. A frame
    /// over the limits is `tooLarge` with nothing sent: the peer would only refuse it
    /// and drop the connection, which reads as a peer that is gone.
    public func write(to fd: Int32) throws {
        let secretLength = secrets.reduce(0) { $0 + 4 + $1.bytes.count }
        try Self.checkSize(body: body.count, secrets: secretLength)
        let header = header(secretLength: secretLength)
        let prefixes = secrets.flatMap { Frame.bigEndian(UInt32($0.bytes.count)) }
        try header.withUnsafeBytes { headerBytes in
            try body.withUnsafeBytes { bodyBytes in
                try prefixes.withUnsafeBytes { prefixBytes in
                    var parts = [headerBytes, bodyBytes]
                    for (index, secret) in secrets.enumerated() {
                        parts += [UnsafeRawBufferPointer(rebasing: prefixBytes[4 * index..<4 * index + 4]), secret.bytes]
                    }
                    try Frame.writeAll(fd, parts)
                }
            }
        }
    }

    /// Sends as much of the frame as the socket takes now, never waiting for room, and
    /// gives back the bytes it did not take (none: all went). Only for a frame without
    /// secrets: what is left waits in ordinary memory.
    public func sendWithoutWaiting(to fd: Int32) throws -> ArraySlice<UInt8> {
        guard secrets.isEmpty else { throw FrameError.malformed("a frame with secrets is sent whole") }
        try Self.checkSize(body: body.count, secrets: 0)
        let bytes = header(secretLength: 0) + body
        while true {
            let n = Glibc.send(fd, bytes, bytes.count, Int32(MSG_DONTWAIT) | Int32(MSG_NOSIGNAL))
            if n >= 0 { return bytes[n...] }
            if errno == EAGAIN || errno == EWOULDBLOCK { return bytes[...] }
            if errno != EINTR { throw FrameError.io(errno) }
        }
    }

    /// Sends `rest`, what `sendWithoutWaiting` left, waiting for room as needed.
    public static func send(rest: ArraySlice<UInt8>, to fd: Int32) throws {
        try rest.withUnsafeBytes { try writeAll(fd, [$0]) }
    }

    /// The limits a reader holds a frame to (FrameLengths).
    private static func checkSize(body: Int, secrets: Int) throws {
        guard body <= ControlProtocol.maxBodySize else { throw FrameError.tooLarge(body) }
        guard secrets <= ControlProtocol.maxSecretSize else { throw FrameError.tooLarge(secrets) }
    }

    private func header(secretLength: Int) -> [UInt8] {
        ControlProtocol.magic
            + [UInt8(ControlProtocol.version >> 8), UInt8(ControlProtocol.version & 0xff), 0, 0]
            + Frame.bigEndian(UInt32(body.count)) + Frame.bigEndian(UInt32(secretLength))
    }

    /// Reads one frame; with a `polling` window, polls first (awaitData) for as long as
    /// `worthPolling` holds, at most the window. Unless the frame has `arrived` (the
    /// caller peeked), the thread then sleeps in poll(2) until it comes (awaitInput).
    /// Header and body come in one system call when their lengths are known from a
    /// peek (the caller's `lengths`, or the poll's).
    ///
    /// The whole frame must come within the socket's receive timeout (SO_RCVTIMEO) of
    /// its first byte, however it trickles in, and memory for the body is taken as its
    /// bytes come: a header alone, announcing 16 MiB, costs its sender one thread for
    /// that long and the first part's buffer, not 16 MiB.
    public static func read(from fd: Int32, polling window: Duration = .zero, while worthPolling: () -> Bool = { true },
                            arrived: Bool = false, lengths peeked: FrameLengths? = nil) throws -> Frame
    where Secret: AllocatedSecret {
        var peeked = peeked
        if !arrived && peeked == nil {
            let polled = window > .zero ? awaitData(fd, upTo: window, while: worthPolling) : (came: false, lengths: nil)
            if !polled.came { try awaitInput(fd, until: FrameDeadline.receiveTimeout(fd).map { ContinuousClock.now + $0 }) }
            peeked = polled.lengths
        }
        var deadline = FrameDeadline()
        var header = [UInt8](repeating: 0, count: ControlProtocol.headerSize)
        let lengths: FrameLengths
        var body: [UInt8]
        if let peeked {
            // Peeked all queued (`arrived`), the body is there to take at once; else its first part.
            body = [UInt8](repeating: 0, count: arrived ? peeked.body : min(peeked.body, firstPartSize))
            try header.withUnsafeMutableBytes { header in
                try body.withUnsafeMutableBytes { try readAll(fd, [header, $0], deadline: &deadline) }
            }
            lengths = try header.withUnsafeBytes(FrameLengths.init(header:))
            guard lengths == peeked else { throw FrameError.malformed("the frame changed after its header was peeked") }
        } else {
            try header.withUnsafeMutableBytes { try readAll(fd, [$0], deadline: &deadline) }
            lengths = try header.withUnsafeBytes(FrameLengths.init(header:))
            body = [UInt8](repeating: 0, count: min(lengths.body, firstPartSize))
            try body.withUnsafeMutableBytes { try readAll(fd, [$0], deadline: &deadline, begun: true) }
        }
        try readRest(of: &body, length: lengths.body, from: fd, deadline: &deadline)
        return Frame(body: body, secrets: try readSecrets(from: fd, sectionLength: lengths.secrets, deadline: &deadline))
    }

    /// How much of a body is read before more memory is taken for the rest.
    static var firstPartSize: Int { 64 << 10 }

    /// Reads the rest of a body of `length` bytes whose first `body.count` are in
    /// `body`, growing it as the bytes come: each step at most doubles what has come.
    private static func readRest(of body: inout [UInt8], length: Int, from fd: Int32,
                                 deadline: inout FrameDeadline) throws {
        while body.count < length {
            let filled = body.count
            let grown = min(length, max(2 * filled, filled + firstPartSize))
            body.reserveCapacity(grown)
            body.append(contentsOf: repeatElement(0, count: grown - filled))
            try body.withUnsafeMutableBytes { all in
                try readAll(fd, [UnsafeMutableRawBufferPointer(rebasing: all[filled...])], deadline: &deadline, begun: true)
            }
        }
    }

    /// The secret section, each secret read straight into its own locked memory.
    private static func readSecrets(from fd: Int32, sectionLength: Int, deadline: inout FrameDeadline) throws -> [Secret]
    where Secret: AllocatedSecret {
        var secrets: [Secret] = []
        var remaining = sectionLength
        while remaining > 0 {
            guard remaining >= 4 else { throw FrameError.malformed("truncated secret section") }
            var lengthBytes = [UInt8](repeating: 0, count: 4)
            try lengthBytes.withUnsafeMutableBytes { try readAll(fd, [$0], deadline: &deadline, begun: true) }
            let length = Int(lengthBytes.withUnsafeBytes { $0.bigEndianUInt32(at: 0) })
            guard length <= remaining - 4 else { throw FrameError.malformed("secret longer than its section") }
            let secret = Secret(count: length)
            try readAll(fd, [secret.mutableBytes], deadline: &deadline, begun: true)
            secrets.append(secret)
            remaining -= 4 + length
        }
        return secrets
    }

    /// Polls the socket for up to `limit` before the caller blocks on it. A reply (or
    /// the next request of a busy client) usually comes within tens of microseconds; a
    /// thread that sleeps for it instead pays a wake-up from an idle CPU, which on a
    /// virtual machine costs more than the work it waited for (SocketPolling says when).
    /// It stops as soon as `worthPolling` fails: another caller has work for the CPU.
    /// Says whether data (or an end) came while it polled, and the frame's lengths when
    /// its whole header came (and passed its checks).
    static func awaitData(_ fd: Int32, upTo limit: Duration, while worthPolling: () -> Bool)
        -> (came: Bool, lengths: FrameLengths?) {
        var header = [UInt8](repeating: 0, count: ControlProtocol.headerSize)
        var peeked = 0
        let came = SocketPolling.poll(upTo: limit, while: worthPolling) {
            peeked = recv(fd, &header, header.count, Int32(MSG_PEEK) | Int32(MSG_DONTWAIT))
            return peeked >= 0 || (errno != EAGAIN && errno != EINTR)
        }
        guard came, peeked == header.count else { return (came, nil) }
        return (came, header.withUnsafeBytes { try? FrameLengths(header: $0) })
    }

    /// Sleeps until `fd` has input (or an end, or an error, which the read then meets);
    /// throws FrameError.io(EAGAIN), as recv(2) would, once `deadline` passes without
    /// any. Not in recv(2): a thread asleep there is also woken each time the peer
    /// takes in what this side sent last (the kernel's write-space wake-up reaches
    /// every sleeper on the socket), which is once per call, a switch in and out for
    /// nothing. poll(2) sleeps for input alone.
    static func awaitInput(_ fd: Int32, until deadline: ContinuousClock.Instant?) throws {
        var entry = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        while true {
            let wait = deadline.map { Int32(min(max(($0 - .now) / .milliseconds(1), 0) + 1, Double(Int32.max))) } ?? -1
            let ready = poll(&entry, 1, wait)
            if ready > 0 { return }
            if ready < 0 && errno != EINTR { return }  // the read meets the error itself
            if let deadline, ContinuousClock.now >= deadline { throw FrameError.io(EAGAIN) }
        }
    }

    static func bigEndian(_ value: UInt32) -> [UInt8] {
        [UInt8(value >> 24), UInt8(value >> 16 & 0xff), UInt8(value >> 8 & 0xff), UInt8(value & 0xff)]
    }

    /// Writes `parts` in order with sendmsg, resuming after a partial write.
    static func writeAll(_ fd: Int32, _ parts: [UnsafeRawBufferPointer]) throws {
        var pending = IOVectors(parts.map { UnsafeMutableRawBufferPointer(mutating: $0) })
        while !pending.isEmpty {
            let n = pending.withMessage { sendmsg(fd, &$0, Int32(MSG_NOSIGNAL)) }
            if n < 0 { if errno == EINTR { continue }; throw FrameError.io(errno) }
            pending.consume(n)
        }
    }

    /// Fills `parts` in order with recvmsg, resuming after a partial read, waiting for
    /// more in poll(2) until `deadline`. An end before any byte of the frame (`begun`
    /// false, nothing read here) is the connection closing; after one, a frame cut short.
    static func readAll(_ fd: Int32, _ parts: [UnsafeMutableRawBufferPointer], deadline: inout FrameDeadline,
                        begun: Bool = false) throws {
        var pending = IOVectors(parts)
        var done = 0
        while !pending.isEmpty {
            let n = pending.withMessage { recvmsg(fd, &$0, Int32(MSG_DONTWAIT)) }
            if n < 0 {
                if errno == EINTR { continue }
                if errno == EAGAIN || errno == EWOULDBLOCK { try awaitInput(fd, until: deadline.instant(for: fd)); continue }
                throw FrameError.io(errno)
            }
            if n == 0 { throw begun || done > 0 ? FrameError.malformed(FrameError.truncatedFrame) : FrameError.closed }
            done += n
            pending.consume(n)
        }
    }
}

/// When a frame being read must be all there: the socket's receive timeout after the
/// read began, asked of the socket only when the read has to wait (most frames are
/// there whole when their read begins).
struct FrameDeadline {
    private let began = ContinuousClock.now
    /// nil until asked; then nil inside when the socket has no timeout.
    private var known: ContinuousClock.Instant??

    mutating func instant(for fd: Int32) -> ContinuousClock.Instant? {
        if let known { return known }
        let instant = Self.receiveTimeout(fd).map { began + $0 }
        known = .some(instant)
        return instant
    }

    /// The socket's receive timeout; nil when it waits forever.
    static func receiveTimeout(_ fd: Int32) -> Duration? {
        var value = timeval()
        var size = socklen_t(MemoryLayout<timeval>.size)
        guard getsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &value, &size) == 0, value.tv_sec > 0 || value.tv_usec > 0 else {
            return nil
        }
        return .seconds(value.tv_sec) + .microseconds(value.tv_usec)
    }
}

/// The buffers a gathered write or a scattered read has still to do, as iovecs.
private struct IOVectors {
    private var vectors: [iovec]
    private var first = 0

    init(_ parts: [UnsafeMutableRawBufferPointer]) {
        vectors = parts.filter { $0.count > 0 }.map { iovec(iov_base: $0.baseAddress, iov_len: $0.count) }
    }

    var isEmpty: Bool { first == vectors.count }

    /// Calls `body` with a message whose iovecs are the pending ones.
    mutating func withMessage(_ body: (inout msghdr) -> Int) -> Int {
        vectors[first...].withUnsafeMutableBufferPointer { pending in
            var message = msghdr()
            message.msg_iov = pending.baseAddress
            message.msg_iovlen = pending.count
            return body(&message)
        }
    }

    /// Marks the first `count` pending bytes done.
    mutating func consume(_ count: Int) {
        var left = count
        while first < vectors.count && left >= vectors[first].iov_len {
            left -= vectors[first].iov_len
            first += 1
        }
        if left > 0 {
            vectors[first].iov_base += left
            vectors[first].iov_len -= left
        }
    }
}

/// A frame's lengths, from a header that passed its checks of magic, version and size.
public struct FrameLengths: Equatable, Sendable {
    public let body: Int
    public let secrets: Int

    /// The whole frame, header included.
    public var total: Int { ControlProtocol.headerSize + body + secrets }

    init(header: UnsafeRawBufferPointer) throws {
        guard header.count >= ControlProtocol.headerSize else { throw FrameError.malformed("truncated header") }
        guard header.prefix(4).elementsEqual(ControlProtocol.magic) else { throw FrameError.badMagic }
        let version = UInt16(header[4]) << 8 | UInt16(header[5])
        guard version == ControlProtocol.version else { throw FrameError.unsupportedVersion(version) }
        body = Int(header.bigEndianUInt32(at: 8))
        secrets = Int(header.bigEndianUInt32(at: 12))
        guard body <= ControlProtocol.maxBodySize else { throw FrameError.tooLarge(body) }
        guard secrets <= ControlProtocol.maxSecretSize else { throw FrameError.tooLarge(secrets) }
    }
}

extension UnsafeRawBufferPointer {
    fileprivate func bigEndianUInt32(at offset: Int) -> UInt32 {
        (0..<4).reduce(0) { $0 << 8 | UInt32(self[offset + $1]) }
    }
}
