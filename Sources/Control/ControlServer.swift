// The daemon's side of the control socket: a Unix socket only the mounting user may
// use (mode 0600 and a SO_PEERCRED check), one request per frame. An accept thread per
// socket checks each connection's peer and hands it to the workers (ControlWorkers),
// which serve every connection's requests (ControlServer+Requests). Malformed input
// gets an error reply and never disturbs the daemon. App sessions add sockets that act
// as one app (ControlScope, AppSessions). The owner's socket has workers of its own,
// apart from the app sessions': no app, however busy it keeps the daemon, delays the
// owner's lock, status or restart.
import DataProtection
import DPFSProtocol
import Foundation
import CLinux
import Glibc
import ItemStore
import KeychainSync

public final class ControlServer: Sendable {
    public let socketPath: String
    let device: LockStateManager
    let items: ItemStore
    /// Keychain sync, where the daemon runs it.
    let sync: SyncEngine?
    /// The lock that follows the login session (mount --lock-on), for status.
    let lockFollowing: (@Sendable () -> LockFollowing)?
    let ownerUID: uid_t
    let listener: Int32
    /// The workers of the owner's socket.
    let ownerWorkers: ControlWorkers
    /// The workers of every app session's socket.
    let appWorkers: ControlWorkers
    /// How many connections the app sessions' sockets hold open, against their caps.
    let appConnections = AppConnectionLimit()
    /// The processes that hold app sessions open, for the owner's status.
    let appRuns = AppRuns()
    /// Told after each request is answered, so that the daemon gives back what serving
    /// it touched once it is idle again (as after the filesystem's requests).
    let served: (@Sendable () -> Void)?
    /// Where the server says what went wrong outside any request (daemon.log).
    let log: @Sendable (String) -> Void
    /// Opened by `start`: until then the owner's accept thread waits.
    private let opened = DispatchSemaphore(value: 0)

    /// Throws also when no thread can start to accept on the socket: before the mount,
    /// rather than a mount no command reaches.
    public init(socketPath: String, device: LockStateManager, items: ItemStore, sync: SyncEngine? = nil,
                lockFollowing: (@Sendable () -> LockFollowing)? = nil,
                served: (@Sendable () -> Void)? = nil, log: @escaping @Sendable (String) -> Void = { _ in }) throws {
        self.socketPath = socketPath
        self.device = device
        self.items = items
        self.sync = sync
        self.lockFollowing = lockFollowing
        self.served = served
        self.log = log
        self.ownerUID = getuid()
        self.ownerWorkers = try ControlWorkers(name: "dpfs-control", log: log)
        self.appWorkers = try ControlWorkers(name: "dpfs-apps", log: log)
        self.listener = try Self.listen(at: socketPath)
        do {
            try accept(on: listener, scope: .owner, after: opened)
        } catch {
            close(listener)
            unlink(socketPath)
            throw error
        }
    }

    /// A listening socket at `path` that only its owner may open. Its mode comes from
    /// the umask at bind (the daemon runs with 0): bound under 0177, then chmod, before
    /// listen. umask is process-wide: app sessions bind while requests are served, and
    /// none of those creates a file through the umask. The directory's lock keeps a
    /// sweep of stale sockets (SocketDirectory) from judging the name while it changes.
    static func listen(at path: String) throws -> Int32 {
        try SocketDirectory.holdingLock(of: (path as NSString).deletingLastPathComponent) { try bindListening(at: path) }
    }

    private static func bindListening(at path: String) throws -> Int32 {
        unlink(path)
        guard var address = UnixAddress(path: path) else { throw SystemError("bind", path, code: ENAMETOOLONG) }
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw SystemError("socket", path) }
        let previousMask = umask(0o177)
        let bound = address.withSockaddr { bind(fd, $0, $1) }
        umask(previousMask)
        guard bound == 0, chmod(path, 0o600) == 0, Glibc.listen(fd, 16) == 0 else {
            let error = SystemError("bind", path)
            close(fd)
            if bound == 0 { unlink(path) }
            throw error
        }
        return fd
    }

    /// Workers: one per CPU, at least two, so that one busy caller never holds up another.
    static var workerCount: Int { max(2, ProcessInfo.processInfo.activeProcessorCount) }

    public func start() {
        ownerWorkers.start(count: Self.workerCount) { [self] in serveReady($0, peeked: $1) }
        appWorkers.start(count: Self.workerCount) { [self] in serveReady($0, peeked: $1) }
        // A prompt may wait seconds for its answer: not on a worker's time (where no
        // thread can take its place, it waits all the same, for its timeout at most).
        items.user.onWaitingForAnswer { [ownerWorkers, appWorkers] in
            _ = ownerWorkers.release() && appWorkers.release()
        }
        opened.signal()
    }

    public func stop() {
        shutdown(listener, Int32(SHUT_RDWR))
        unlink(socketPath)
    }

    /// Serves `listener` on a thread of its own (once `gate` opens, if given) until it is
    /// shut down, then closes it; the owner's stays open until the daemon ends.
    func accept(on listener: Int32, scope: ControlScope, after gate: DispatchSemaphore? = nil)
        throws(PosixThread.StartError) {
        try PosixThread.start(named: "dpfs-accept") { [self] in
            gate?.wait()
            acceptLoop(listener, scope: scope)
            if listener != self.listener { close(listener) }
        }
    }

    /// The workers that serve connections of `scope`.
    func workers(for scope: ControlScope) -> ControlWorkers {
        scope.bundleID == nil ? ownerWorkers : appWorkers
    }

    /// Releases the calling thread from whichever pool it serves (ControlWorkers.release):
    /// false if it must not wait, as the last worker of its pool free to serve.
    func releaseWorker() -> Bool {
        // A thread is one pool's at most: the other does nothing and says true.
        ownerWorkers.release() && appWorkers.release()
    }
}

/// The daemon reads secrets (passcodes, item data) into libsodium's guarded memory.
typealias ServerFrame = Frame<SecureBuffer>
