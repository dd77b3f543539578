// The daemon's side of the control socket: a Unix socket only the mounting user may
// use (mode 0600 and a SO_PEERCRED check), one thread per connection, one request per
// frame. Malformed input gets an error reply and never disturbs the daemon. App
// sessions add sockets that act as one app (ControlScope, AppSessions).
import DataProtection
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
    let ownerUID: uid_t
    let listener: Int32
    /// Told after each request is answered, so that the daemon gives back what serving
    /// it touched once it is idle again (as after the filesystem's requests).
    let served: (@Sendable () -> Void)?

    public init(socketPath: String, device: LockStateManager, items: ItemStore, sync: SyncEngine? = nil,
                served: (@Sendable () -> Void)? = nil) throws {
        self.socketPath = socketPath
        self.device = device
        self.items = items
        self.sync = sync
        self.served = served
        self.ownerUID = getuid()
        self.listener = try Self.listen(at: socketPath)
    }

    /// A listening socket at `path` that only its owner may open. Its mode comes from
    /// the umask at bind (the daemon runs with 0): bound under 0177, then chmod, before
    /// listen. umask is process-wide: app sessions bind while requests are served, and
    /// none of those creates a file through the umask.
    static func listen(at path: String) throws -> Int32 {
        unlink(path)
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw SystemError("socket", path) }
        let previousMask = umask(0o177)
        var address = UnixAddress(path: path)
        let bound = address.withSockaddr { bind(fd, $0, $1) }
        umask(previousMask)
        guard bound == 0, chmod(path, 0o600) == 0, Glibc.listen(fd, 16) == 0 else {
            let error = SystemError("bind", path)
            close(fd)
            throw error
        }
        return fd
    }

    public func start() {
        accept(on: listener, scope: .owner)
    }

    public func stop() {
        shutdown(listener, Int32(SHUT_RDWR))
        unlink(socketPath)
    }

    /// Serves `listener` on a thread of its own until it is shut down, then closes it.
    func accept(on listener: Int32, scope: ControlScope) {
        let thread = Thread { [self] in
            acceptLoop(listener, scope: scope)
            if listener != self.listener { close(listener) }
        }
        thread.name = "dpfs-control"
        thread.start()
    }

    private func acceptLoop(_ listener: Int32, scope: ControlScope) {
        while true {
            let connection = dpfs_accept_cloexec(listener)
            if connection < 0 {
                if errno == EINTR || errno == ECONNABORTED { continue }
                return
            }
            guard peerIsOwner(connection) else {
                try? ServerFrame(body: (try? ControlCoding.encode(ControlReply.failure("permission denied: this dpfs daemon serves only the user who mounted it"))) ?? []).write(to: connection)
                close(connection)
                continue
            }
            let thread = Thread { [self] in
                serve(connection, scope: scope)
                close(connection)
            }
            thread.start()
        }
    }

    private func peerIsOwner(_ fd: Int32) -> Bool {
        dpfs_peer_uid(fd) == Int64(ownerUID)
    }

    private func serve(_ fd: Int32, scope: ControlScope) {
        var sessions = AppSessions()
        defer { sessions.end() }
        let connection = SocketPolling.newConnection()
        var timeout = timeval(tv_sec: 30, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        while true {
            let frame: ServerFrame
            do {
                // Polls only while this connection is the one caller (SocketPolling):
                // with several, a poll takes the CPU their next requests need.
                frame = try ServerFrame.read(from: fd, polling: SocketPolling.window(forConnection: connection),
                                             while: { SocketPolling.onlyCaller(connection) })
            } catch FrameError.closed {
                return
            } catch {
                reply(fd, .failure("\(error)"))
                drain(fd)  // the stream is out of step after a bad frame; end it cleanly
                return
            }
            SocketPolling.begin(connection: connection)
            defer { SocketPolling.end(); served?() }
            let request: ControlRequest
            do {
                request = try ControlCoding.decode(ControlRequest.self, frame.body)
            } catch {
                reply(fd, .failure("malformed request: not a valid dpfs control message"))
                continue
            }
            if let refusal = scope.refusal(of: request) {
                reply(fd, .failure(refusal))
                continue
            }
            switch request {
            case .events:
                streamEvents(fd)
                return
            case .keychainExport:
                KeychainExport.stream(items, device: device, to: fd)
            case .appSession(let bundleID, let deviceControl):
                reply(fd, sessions.open(for: bundleID, deviceControl: deviceControl, server: self))
                // The session lasts as long as this connection, however quiet it is.
                var forever = timeval(tv_sec: 0, tv_usec: 0)
                setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &forever, socklen_t(MemoryLayout<timeval>.size))
            default:
                reply(fd, RequestHandler(device: device, items: items, scope: scope, sync: sync).handle(request, secrets: frame.secrets))
            }
        }
    }

    /// Reads and drops what the peer still sends (briefly), so closing does not reset
    /// the connection before the peer has read the error reply.
    private func drain(_ fd: Int32) {
        shutdown(fd, Int32(SHUT_WR))
        var timeout = timeval(tv_sec: 1, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var scratch = [UInt8](repeating: 0, count: 4096)
        var budget = 1 << 20
        while budget > 0 {
            let n = recv(fd, &scratch, scratch.count, 0)
            if n <= 0 { return }
            budget -= n
        }
    }

    private func reply(_ fd: Int32, _ reply: ControlReply) {
        guard let body = try? ControlCoding.encode(reply) else { return }
        try? ServerFrame(body: body).write(to: fd)
    }

    /// Streams events until the subscriber hangs up or is dropped for falling behind
    /// (EventSubscription): the device posts to the subscription's queue and never
    /// waits for this socket.
    private func streamEvents(_ fd: Int32) {
        let subscription = EventSubscription(fd: fd)
        let id = device.observe { subscription.post($0) }
        reply(fd, ControlReply(ok: true, message: "subscribed", status: device.status()))
        let writerDone = DispatchSemaphore(value: 0)
        let writer = Thread {
            // Named from inside: Foundation does not name the system thread. Tests
            // count a daemon's subscribers by it.
            dpfs_name_thread("dpfs-events")
            subscription.writeEvents()
            writerDone.signal()
        }
        writer.start()
        subscription.awaitHangUp()
        device.stopObserving(id)
        subscription.end()
        // The caller closes the descriptor: the writer must be done with it first.
        writerDone.wait()
    }
}

/// The daemon reads secrets (passcodes, item data) into libsodium's guarded memory.
typealias ServerFrame = Frame<SecureBuffer>
