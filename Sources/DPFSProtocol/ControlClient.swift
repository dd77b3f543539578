// The CLI's side of the control socket: finds the daemon behind a mountpoint, makes
// sure it is the caller's own before anything is sent (OwnedMount, then the peer's
// credentials), sends one request, reads the reply (or a stream of replies for events).
// Connecting has a deadline: connect(2) on a Unix socket waits for room in the
// listener's backlog, which a daemon that is stopped, or whose descriptors are all
// taken, never makes, and the peer check waits for the daemon's status.
import Foundation
import CLinux
import Glibc

public enum ControlClientError: Error, CustomStringConvertible {
    /// The path failed the checks of OwnedMount or of the connection's peer: nothing was sent.
    case refused(String, reason: String)
    case cannotConnect(String, Int32)
    /// The daemon took no connection, or did not show who it is, within the deadline.
    case noAnswer(String, seconds: Double)
    /// The mount's daemon died: the mount fails closed until it is taken down.
    case daemonDied(String)
    case daemon(String, failure: ControlFailure? = nil)

    /// What the mount of a dead daemon does until it is taken down.
    public static func afterDeath(of path: String) -> String {
        "its mount refuses every access until `dpfs unmount \(path)` or the next `dpfs mount` on it takes it down"
    }

    public var description: String {
        switch self {
        case .refused(let path, let reason):
            return "\(path) is not a dpfs mount owned by you; refusing to send anything to it (\(reason))"
        case .cannotConnect(let path, let code):
            return "cannot reach the dpfs daemon of \(path): \(String(cString: strerror(code)))"
        case .noAnswer(let path, let seconds):
            let shown = seconds == seconds.rounded() ? "\(Int(seconds))" : "\(seconds)"
            return "the dpfs daemon of \(path) did not answer within \(shown) s"
        case .daemonDied(let path):
            return "the dpfs daemon of \(path) has died; " + Self.afterDeath(of: path)
        case .daemon(let text, _): return text
        }
    }
}

/// Replies carry no secrets; a secret section, should one come, is read into locked memory.
typealias ClientFrame = Frame<LockedSecret>

public final class ControlClient {
    /// How long a connection may take when the caller names no deadline: as long as
    /// `dpfs lock` waits for the daemon's reply.
    public static let connectTimeout: Double = 15

    let fd: Int32
    /// The mountpoint as the caller named it, and as the mount table shows it (resolved).
    let mountpoint: String
    private let mountRoot: String

    /// Connects to the daemon of `mountpoint` once it is shown to be the caller's own
    /// (OwnedMount, then the peer's credentials); throws `.refused` before any byte is sent,
    /// `.noAnswer` when the mount's check, the connection and its check take longer than
    /// `timeout` seconds (a stopped daemon answers none of them).
    /// A program under `dpfs run` reaches it through the app socket it was given.
    public init(mountpoint: String, timeout: Double = connectTimeout) throws {
        self.mountpoint = mountpoint
        if let appSocket = AppSocket.given(for: mountpoint) {
            mountRoot = mountpoint
            fd = try Self.connected(to: appSocket, mountpoint: mountpoint, peerPIDKnown: false, timeout: timeout)
            return
        }
        let deadline = ContinuousClock.now + .seconds(timeout)
        let found: OwnedMount?
        do { found = try OwnedMount.within(timeout, mountpoint) } catch {
            if error.daemonDied { throw ControlClientError.daemonDied(mountpoint) }
            throw ControlClientError.refused(mountpoint, reason: error.reason)
        }
        guard let mount = found else { throw ControlClientError.noAnswer(mountpoint, seconds: timeout) }
        mountRoot = mount.path
        do {
            fd = try Self.connected(to: mount.socketPath, mountpoint: mountpoint, peerPIDKnown: true,
                                    timeout: timeout, by: deadline)
        } catch {
            throw Self.deathShown(by: error, mountRoot: mount.path, mountpoint: mountpoint) ?? error
        }
    }

    /// Connects to `socketPath`, whose peer must be process `pid` running as `uid`
    /// (ControlClient+Root).
    init(socketPath: String, peer: (pid: pid_t, uid: uid_t), mountpoint: String, timeout: Double) throws {
        self.mountpoint = mountpoint
        mountRoot = mountpoint
        fd = try Self.connected(to: socketPath, mountpoint: mountpoint, peerPIDKnown: true, timeout: timeout,
                                expecting: peer)
    }

    /// Connects to an app session's socket (as `dpfs run` does for its program).
    public init(appSocket: String, mountpoint: String, timeout: Double = connectTimeout) throws {
        self.mountpoint = mountpoint
        mountRoot = mountpoint
        fd = try Self.connected(to: appSocket, mountpoint: mountpoint, peerPIDKnown: false, timeout: timeout)
    }

    /// `.daemonDied` when `error` broke the connection as the daemon's death does and
    /// the mount shows it dead; else nil.
    private static func deathShown(by error: any Error, mountRoot: String, mountpoint: String) -> ControlClientError? {
        guard DaemonDeath.breaksConnection(error), DaemonDeath.isDead(mountRoot: mountRoot) else { return nil }
        return .daemonDied(mountpoint)
    }

    /// `body`'s result; a connection that broke under it because the daemon died is
    /// reported as that death, as `dpfs status` reports it.
    func tellingDeath<T>(_ body: () throws -> T) throws -> T {
        do { return try body() } catch {
            throw Self.deathShown(by: error, mountRoot: mountRoot, mountpoint: mountpoint) ?? error
        }
    }

    /// A connection to `socketPath` whose peer passed `checkPeer`, both within `timeout`
    /// seconds (or by `deadline`, when part of the timeout went before). In a program's own PID namespace the daemon has no pid to compare
    /// (`peerPIDKnown` false). Its reads and writes then wait as long as they take,
    /// unless the caller sets a timeout (ControlClient+Timeout).
    private static func connected(to socketPath: String, mountpoint: String, peerPIDKnown: Bool,
                                  timeout: Double, by deadline: ContinuousClock.Instant? = nil,
                                  expecting peer: (pid: pid_t, uid: uid_t)? = nil) throws -> Int32 {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw ControlClientError.cannotConnect(mountpoint, errno) }
        let deadline = deadline ?? ContinuousClock.now + .seconds(timeout)
        let noAnswer = ControlClientError.noAnswer(mountpoint, seconds: timeout)
        do {
            try connect(fd, to: socketPath, mountpoint: mountpoint, by: deadline, else: noAnswer)
            guard setTimeouts(fd, until: deadline) else { throw noAnswer }
            do {
                if let peer {
                    try checkPeer(fd, mountpoint: mountpoint, is: peer)
                } else {
                    try checkPeer(fd, mountpoint: mountpoint, comparePID: peerPIDKnown)
                }
            } catch FrameError.io(let code) where code == EAGAIN || code == EWOULDBLOCK {
                throw noAnswer
            }
            setSocketTimeout(fd, seconds: 0)
        } catch {
            close(fd)
            throw error
        }
        return fd
    }

    deinit { close(fd) }

    /// Whether a dpfs filesystem, anyone's, is mounted on `mountpoint`.
    public static func isMounted(_ mountpoint: String) -> Bool {
        guard let resolved = realpath(mountpoint, nil) else { return false }
        defer { free(resolved) }
        return MountTable.topmost(at: String(cString: resolved))?.fsType == MountEntry.dpfsType
    }

    /// Connects `fd`, waiting for room in the listener's backlog until `deadline` (a
    /// send timeout bounds that wait; without room when it ends, connect says EAGAIN).
    private static func connect(_ fd: Int32, to socketPath: String, mountpoint: String,
                                by deadline: ContinuousClock.Instant, else noAnswer: ControlClientError) throws {
        guard var address = UnixAddress(path: socketPath) else {
            throw ControlClientError.cannotConnect(mountpoint, ENAMETOOLONG)
        }
        while true {
            guard setTimeouts(fd, until: deadline) else { throw noAnswer }
            if address.withSockaddr({ Glibc.connect(fd, $0, $1) }) == 0 { return }
            switch errno {
            case EINTR: continue  // a signal while it waited: nothing was connected yet
            case EAGAIN: throw noAnswer
            case let code: throw ControlClientError.cannotConnect(mountpoint, code)
            }
        }
    }

    /// Sets `fd`'s timeouts to the time left until `deadline`; false once it has passed.
    private static func setTimeouts(_ fd: Int32, until deadline: ContinuousClock.Instant) -> Bool {
        let (seconds, attoseconds) = (deadline - .now).components
        let left = Double(seconds) + Double(attoseconds) / 1e18
        return left > 0 && setSocketTimeout(fd, seconds: left)
    }

    /// The peer must run as the caller (SO_PEERCRED uid) and be the daemon it says it
    /// is: the pid its status reports (nothing secret is asked) is the pid the kernel
    /// gives for the socket's other end.
    private static func checkPeer(_ fd: Int32, mountpoint: String, comparePID: Bool) throws {
        var pid: pid_t = 0
        var uid: uid_t = 0
        guard dpfs_peer_credentials(fd, &pid, &uid) == 0 else {
            throw ControlClientError.refused(mountpoint, reason: "the peer of its control socket is unknown")
        }
        guard uid == getuid() else {
            throw ControlClientError.refused(mountpoint, reason: "the peer of its control socket runs as uid \(uid)")
        }
        guard comparePID else { return }
        try ClientFrame(body: ControlCoding.encode(ControlRequest.status)).write(to: fd)
        let reply = try ControlCoding.decode(ControlReply.self, ClientFrame.read(from: fd).body)
        guard let status = reply.status, status.pid == pid else {
            throw ControlClientError.refused(mountpoint, reason: "the peer of its control socket (pid \(pid)) is not the daemon it reports")
        }
    }

    /// The peer must be process `peer.pid`, running as `peer.uid`.
    private static func checkPeer(_ fd: Int32, mountpoint: String, is peer: (pid: pid_t, uid: uid_t)) throws {
        var pid: pid_t = 0
        var uid: uid_t = 0
        guard dpfs_peer_credentials(fd, &pid, &uid) == 0, pid == peer.pid, uid == peer.uid else {
            throw ControlClientError.refused(mountpoint, reason: "the peer of its control socket is not its daemon")
        }
    }

    /// One request, one reply; a daemon-side failure becomes a thrown error.
    public func send(_ request: ControlRequest) throws -> ControlReply {
        try send(request, secrets: [LockedSecret]())
    }

    /// One request with secrets (a passcode, an item's data), which go from the
    /// caller's locked memory straight to the socket.
    public func send<Secret: SecretBytes>(_ request: ControlRequest, secrets: [Secret]) throws -> ControlReply {
        SocketPolling.begin()
        defer { SocketPolling.end() }
        let message = try ControlCoding.encode(request)
        let frame = try tellingDeath {
            try Frame(body: message, secrets: secrets).write(to: fd)
            return try ClientFrame.read(from: fd, polling: SocketPolling.window(besides: 1),
                                        while: { SocketPolling.alone(besides: 1) })
        }
        let reply = try ControlCoding.decode(ControlReply.self, frame.body)
        if !reply.ok && reply.keychain == nil && reply.key == nil {
            throw ControlClientError.daemon(reply.error ?? "the daemon refused the request", failure: reply.failure)
        }
        return reply
    }

    /// Sends a request and hands every reply to `body` until it returns false or the
    /// daemon closes the connection.
    public func stream(_ request: ControlRequest, _ body: (ControlReply) -> Bool) throws {
        try ClientFrame(body: ControlCoding.encode(request)).write(to: fd)
        while true {
            let frame: ClientFrame
            do { frame = try ClientFrame.read(from: fd) } catch FrameError.closed { return }
            let reply = try ControlCoding.decode(ControlReply.self, frame.body)
            if !reply.ok { throw ControlClientError.daemon(reply.error ?? "the daemon refused the request", failure: reply.failure) }
            if !body(reply) { return }
        }
    }
}

/// sockaddr_un for a path, usable with bind and connect.
public struct UnixAddress {
    var storage = sockaddr_un()

    /// Nil for a path longer than sun_path holds: cut short, it would name another file.
    public init?(path: String) {
        storage.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        guard bytes.count < MemoryLayout.size(ofValue: storage.sun_path), !bytes.contains(0) else { return nil }
        withUnsafeMutableBytes(of: &storage.sun_path) { raw in
            raw.copyBytes(from: bytes)
            raw[bytes.count] = 0
        }
    }

    public mutating func withSockaddr<R>(_ body: (UnsafePointer<sockaddr>, socklen_t) -> R) -> R {
        withUnsafePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { body($0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
    }
}
