// One client's connection to a control socket (the owner's or an app session's), as
// the workers pass it around.
import DPFSProtocol

final class ControlConnection: Sendable {
    let fd: Int32
    let scope: ControlScope
    /// Names the connection in the workers' epoll set and to SocketPolling. Unlike the
    /// descriptor it is never reused, so a stale wake-up cannot reach another client.
    let id: Int
    /// Where the serving worker peeks at the next request (FrameArrival); one worker
    /// at a time serves a connection.
    let peekBuffer = LockedSecret(count: FrameArrival.peekSize)

    init(fd: Int32, scope: ControlScope) {
        self.fd = fd
        self.scope = scope
        self.id = SocketPolling.newConnection()
    }
}
