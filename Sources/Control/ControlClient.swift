// The CLI's side of the control socket: finds the daemon behind a mountpoint, sends one
// request, reads the reply (or a stream of replies for events).
import DataProtection
import Foundation
import CLinux
import Glibc

public enum ControlClientError: Error, CustomStringConvertible {
    case notMounted(String)
    case cannotConnect(String, Int32)
    case daemon(String)

    public var description: String {
        switch self {
        case .notMounted(let path): return "\(path) is not a mounted dpfs sandbox"
        case .cannotConnect(let path, let code):
            return "cannot reach the dpfs daemon of \(path): \(String(cString: strerror(code)))"
        case .daemon(let text): return text
        }
    }
}

public final class ControlClient {
    /// The mount root answers this attribute with the path of its control socket.
    public static let socketAttribute = MountAttributes.controlSocket
    let fd: Int32

    public init(mountpoint: String) throws {
        let socketPath = try Self.socketPath(of: mountpoint)
        fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw ControlClientError.cannotConnect(mountpoint, errno) }
        var address = UnixAddress(path: socketPath)
        let rc = address.withSockaddr { Glibc.connect(fd, $0, $1) }
        guard rc == 0 else {
            let code = errno
            close(fd)
            throw ControlClientError.cannotConnect(mountpoint, code)
        }
    }

    deinit { close(fd) }

    /// Whether a dpfs daemon answers at `mountpoint`.
    public static func isMounted(_ mountpoint: String) -> Bool {
        (try? socketPath(of: mountpoint)) != nil
    }

    static func socketPath(of mountpoint: String) throws -> String {
        var buffer = [UInt8](repeating: 0, count: 4096)
        let n = getxattr(mountpoint, socketAttribute, &buffer, buffer.count)
        guard n > 0 else { throw ControlClientError.notMounted(mountpoint) }
        return String(decoding: buffer[0..<n], as: UTF8.self)
    }

    /// One request, one reply; a daemon-side failure becomes a thrown error.
    public func send(_ request: ControlRequest, secrets: [SecureBuffer] = []) throws -> ControlReply {
        try Frame(json: ControlCoding.encode(request), secrets: secrets).write(to: fd)
        let reply = try ControlCoding.decode(ControlReply.self, Frame.read(from: fd).json)
        if !reply.ok && reply.keychain == nil {
            throw ControlClientError.daemon(reply.error ?? "the daemon refused the request")
        }
        return reply
    }

    /// Sends a request and hands every reply to `body` until it returns false or the
    /// daemon closes the connection.
    public func stream(_ request: ControlRequest, _ body: (ControlReply) -> Bool) throws {
        try Frame(json: ControlCoding.encode(request)).write(to: fd)
        while true {
            let frame: Frame
            do { frame = try Frame.read(from: fd) } catch FrameError.closed { return }
            let reply = try ControlCoding.decode(ControlReply.self, frame.json)
            if !reply.ok { throw ControlClientError.daemon(reply.error ?? "the daemon refused the request") }
            if !body(reply) { return }
        }
    }
}

/// sockaddr_un for a path, usable with bind and connect.
struct UnixAddress {
    var storage = sockaddr_un()

    init(path: String) {
        storage.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8.prefix(MemoryLayout.size(ofValue: storage.sun_path) - 1))
        withUnsafeMutableBytes(of: &storage.sun_path) { raw in
            raw.copyBytes(from: bytes)
            raw[bytes.count] = 0
        }
    }

    mutating func withSockaddr<R>(_ body: (UnsafePointer<sockaddr>, socklen_t) -> R) -> R {
        withUnsafePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { body($0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
    }
}
