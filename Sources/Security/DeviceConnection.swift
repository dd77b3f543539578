// The way to the device: the daemon of the mount DPFS_MOUNT names, reached through
// Control's client, as the app DPFS_APP names (unset: the sandbox's own app, as
// `dpfs keychain` without --app). Connections are kept in a small pool so a call
// costs one request and one reply, not a getxattr and a connect; each call takes a
// connection of its own, so calls of several threads never wait for one another.
// Every wait is bounded: an unreachable device answers `.unreachable`
// (errSecNotAvailable) in at most `timeout`, never a hang. A daemon whose socket
// takes no connection in that time (its backlog full) is unreachable as one that
// answers no request is, and the connect itself gives up then, leaving no thread
// waiting on it. A request larger than a control frame may be is `.tooLarge`, sent
// nowhere: no device is missing then.
import DPFSProtocol
import Glibc

final class DeviceConnection: Sendable {
    static let shared = DeviceConnection()
    static let timeoutSeconds = 10
    /// Below the daemon's 30 s idle limit, after which it closes a connection.
    static let idleLimit: Duration = .seconds(20)
    static let maxIdle = 16

    private let idle = PosixMutex<[PooledClient]>([])

    /// One keychain request as the calling app.
    func send(_ request: KeychainRequest) -> DeviceAnswer<KeychainResponse> {
        var request = request
        request.app = Self.environment("DPFS_APP")
        return call(.keychain(request)) { $0.keychain }
    }

    /// One SecKey request as the calling app.
    func send(_ request: KeyRequest) -> DeviceAnswer<KeyResponse> {
        var request = request
        request.app = Self.environment("DPFS_APP")
        return call(.secKey(request)) { $0.key }
    }

    private func call<Answer>(_ request: ControlRequest, _ answer: (ControlReply) -> Answer?) -> DeviceAnswer<Answer> {
        guard let mountpoint = Self.environment("DPFS_MOUNT") else { return .unreachable }
        if let pooled = take(mountpoint) {
            switch exchange(pooled, request, answer) {
            case .answered(let response):
                give(pooled)
                return .answered(response)
            case .tooLarge:
                give(pooled)  // nothing was sent on it
                return .tooLarge
            case .timedOut:
                return .unreachable
            case .failed:
                break  // the daemon closed it (restart of the mount, idle limit): try a fresh one
            }
        }
        guard let fresh = connect(mountpoint) else { return .unreachable }
        switch exchange(fresh, request, answer) {
        case .answered(let response):
            give(fresh)
            return .answered(response)
        case .tooLarge:
            give(fresh)
            return .tooLarge
        case .timedOut, .failed:
            return .unreachable
        }
    }

    private enum Outcome<Answer> { case answered(Answer), tooLarge, timedOut, failed }

    private func exchange<Answer>(_ pooled: PooledClient, _ request: ControlRequest,
                                  _ answer: (ControlReply) -> Answer?) -> Outcome<Answer> {
        do {
            guard let response = answer(try pooled.client.send(request)) else { return .failed }
            return .answered(response)
        } catch FrameError.tooLarge {
            return .tooLarge
        } catch FrameError.io(let code) where code == EAGAIN || code == EWOULDBLOCK {
            // The daemon may have acted on the request: never send it again.
            return .timedOut
        } catch {
            return .failed
        }
    }

    private func take(_ mountpoint: String) -> PooledClient? {
        let now = ContinuousClock.now
        return idle.withLock { clients in
            // A forked child must not share its parent's connections (their frames would interleave).
            let pid = getpid()
            clients.removeAll { now - $0.lastUsed > Self.idleLimit || $0.ownerPID != pid }
            guard let index = clients.lastIndex(where: { $0.mountpoint == mountpoint }) else { return nil }
            return clients.remove(at: index)
        }
    }

    private func give(_ pooled: PooledClient) {
        pooled.lastUsed = ContinuousClock.now
        idle.withLock { clients in
            if clients.count < Self.maxIdle { clients.append(pooled) }
        }
    }

    /// A fresh connection, or nil: ControlClient gives up within the timeout, the
    /// mount's check included (a stopped daemon answers none of it).
    private func connect(_ mountpoint: String) -> PooledClient? {
        guard let client = try? ControlClient(mountpoint: mountpoint, timeout: Double(Self.timeoutSeconds)) else {
            return nil
        }
        client.setTimeout(seconds: Double(Self.timeoutSeconds))
        return PooledClient(client, mountpoint: mountpoint)
    }

    private static func environment(_ name: String) -> String? {
        guard let value = getenv(name) else { return nil }
        let text = String(cString: value)
        return text.isEmpty ? nil : text
    }
}

/// What a call to the device came to.
enum DeviceAnswer<Response> {
    case answered(Response)
    /// No device answers (DPFS_MOUNT unset, no daemon, no reply in time).
    case unreachable
    /// The request is larger than a control frame may be (16 MiB); nothing was sent.
    case tooLarge
}

/// A connection and where it leads. Owned by one thread at a time: the pool, or the
/// caller that took it out, which is what makes the unchecked Sendable sound.
final class PooledClient: @unchecked Sendable {
    let client: ControlClient
    let mountpoint: String
    let ownerPID = getpid()
    var lastUsed = ContinuousClock.now

    init(_ client: ControlClient, mountpoint: String) {
        self.client = client
        self.mountpoint = mountpoint
    }
}
