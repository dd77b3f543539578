// One client's connection to a control socket (the owner's or an app session's), as
// the workers pass it around.
import DPFSProtocol
import Glibc

final class ControlConnection: Sendable {
    let fd: Int32
    let scope: ControlScope
    /// Names the connection in the workers' epoll set and to SocketPolling. Unlike the
    /// descriptor it is never reused, so a stale wake-up cannot reach another client.
    let id: Int
    /// Where the serving worker peeks at the next request (FrameArrival); one worker
    /// at a time serves a connection.
    let peekBuffer = LockedSecret(count: FrameArrival.peekSize)
    /// An app connection's place among those its socket may hold open.
    private let place: AppConnectionPlace?

    init(fd: Int32, scope: ControlScope, place: AppConnectionPlace? = nil) {
        self.fd = fd
        self.scope = scope
        self.id = SocketPolling.newConnection()
        self.place = place
    }

    /// Closes the descriptor and gives the connection's place back.
    func close() {
        Glibc.close(fd)
        place?.giveBack()
    }
}
