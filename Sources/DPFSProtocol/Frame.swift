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
        try FrameIO.checkSize(body: body.count, secrets: secretLength)
        let header = FrameIO.header(body: body.count, secrets: secretLength)
        let prefixes = secrets.flatMap { FrameIO.bigEndian(UInt32($0.bytes.count)) }
        try header.withUnsafeBytes { headerBytes in
            try body.withUnsafeBytes { bodyBytes in
                try prefixes.withUnsafeBytes { prefixBytes in
                    var parts = [headerBytes, bodyBytes]
                    for (index, secret) in secrets.enumerated() {
                        parts += [UnsafeRawBufferPointer(rebasing: prefixBytes[4 * index..<4 * index + 4]), secret.bytes]
                    }
                    try FrameIO.writeAll(fd, parts)
                }
            }
        }
    }

    /// Sends as much of the frame as the socket takes now, never waiting for room, and
    /// gives back the bytes it did not take (none: all went). Only for a frame without
    /// secrets: what is left waits in ordinary memory.
    public func sendWithoutWaiting(to fd: Int32) throws -> ArraySlice<UInt8> {
        guard secrets.isEmpty else { throw FrameError.malformed("a frame with secrets is sent whole") }
        return try FrameIO.sendWithoutWaiting(body: body, to: fd)
    }

    /// Sends `rest`, what `sendWithoutWaiting` left, waiting for room as needed.
    public static func send(rest: ArraySlice<UInt8>, to fd: Int32) throws {
        try rest.withUnsafeBytes { try FrameIO.writeAll(fd, [$0]) }
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
        var read = try FrameIO.readBody(from: fd, polling: window, while: worthPolling, arrived: arrived, lengths: peeked)
        return Frame(body: read.body, secrets: try readSecrets(from: fd, sectionLength: read.lengths.secrets,
                                                               deadline: &read.deadline))
    }

    /// The secret section, each secret read straight into its own locked memory.
    private static func readSecrets(from fd: Int32, sectionLength: Int, deadline: inout FrameDeadline) throws -> [Secret]
    where Secret: AllocatedSecret {
        var secrets: [Secret] = []
        var remaining = sectionLength
        while remaining > 0 {
            guard remaining >= 4 else { throw FrameError.malformed("truncated secret section") }
            var lengthBytes = [UInt8](repeating: 0, count: 4)
            try lengthBytes.withUnsafeMutableBytes { try FrameIO.readAll(fd, [$0], deadline: &deadline, begun: true) }
            let length = Int(lengthBytes.withUnsafeBytes { $0.bigEndianUInt32(at: 0) })
            guard length <= remaining - 4 else { throw FrameError.malformed("secret longer than its section") }
            let secret = Secret(count: length)
            try FrameIO.readAll(fd, [secret.mutableBytes], deadline: &deadline, begun: true)
            secrets.append(secret)
            remaining -= 4 + length
        }
        return secrets
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
    func bigEndianUInt32(at offset: Int) -> UInt32 {
        (0..<4).reduce(0) { $0 << 8 | UInt32(self[offset + $1]) }
    }
}
