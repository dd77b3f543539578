// Accepting on a control socket whatever the daemon runs short of. Out of descriptors
// (EMFILE, ENFILE) or of kernel memory (ENOMEM, ENOBUFS), accept(2) fails at once and
// keeps failing. Were the accept thread to leave then, the socket, still listening,
// would never be answered again while the mount served on, unlocked for good: so one
// line in the log says so, the thread waits briefly between tries, and only the
// socket's shutdown ends it. A spare descriptor, held for the purpose, lets one waiting
// connection in while descriptors are out: the owner's is served (it may be the lock),
// an app's is closed at once, as are the rest of that app's queue behind it. An app
// socket takes no more connections than its share of the descriptors
// (AppConnectionLimit): one beyond is told so and closed.
import CLinux
import DPFSProtocol
import Foundation
import Glibc

extension ControlServer {
    /// Between two tries while accept(2) fails for want of something.
    static let shortageWait: useconds_t = 50_000

    func acceptLoop(_ listener: Int32, scope: ControlScope) {
        let counted = scope.bundleID.map { appConnections.socket(of: $0) }
        var spare = SpareDescriptor()
        defer { spare.close() }
        var short = false
        while true {
            spare.reopen()
            let connection = dpfs_accept_cloexec(listener)
            if connection >= 0 {
                short = false
                admit(connection, scope: scope, counted: counted)
                continue
            }
            let error = errno
            switch error {
            case EINTR, ECONNABORTED, EPROTO: continue  // that connection's, not the socket's
            case EINVAL, EBADF, ENOTSOCK: return  // shut down: the daemon's end, or its app session's
            default: break
            }
            if !short {
                short = true
                log("control socket: cannot accept a connection (\(String(cString: strerror(error)))): "
                    + "it waits and tries again until there are descriptors and memory to spare")
            }
            if error == EMFILE || error == ENFILE, let taken = spare.acceptInItsPlace(listener) {
                if scope == .owner { admit(taken, scope: scope, counted: nil) } else { close(taken) }
                continue
            }
            usleep(Self.shortageWait)
        }
    }

    /// Hands `connection` to the workers once its peer is the owner (or root, on the
    /// owner's socket, in a scope of its own) and, on an app socket (`counted`), it has
    /// a place among that socket's; refuses it otherwise.
    private func admit(_ connection: Int32, scope given: ControlScope, counted: AppSocketConnections?) {
        let peer = dpfs_peer_uid(connection)
        let scope: ControlScope
        if peer == Int64(ownerUID) {
            scope = given
        } else if peer == 0 && given == .owner {
            scope = .root
        } else {
            sendAtOnce(.failure("permission denied: this dpfs daemon serves only the user who mounted it"), to: connection)
            close(connection)
            return
        }
        var place: AppConnectionPlace?
        if let counted {
            switch counted.admit() {
            case .admitted(let taken): place = taken
            case .refused(let reply, let line):
                line.map(log)
                sendAtOnce(.failure(reply), to: connection)
                close(connection)
                return
            }
        }
        // A thread reading a frame that is still arriving gives up after 30 s of
        // silence, as ControlWorkers closes a connection idle between requests; a write
        // the client takes nothing of for as long gives up too (a reply has a deadline
        // of its own as well: ControlServer+Requests).
        var timeout = timeval(tv_sec: Int(ControlWorkers.idleLimit.components.seconds), tv_usec: 0)
        setsockopt(connection, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(connection, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        workers(for: scope).add(ControlConnection(fd: connection, scope: scope, place: place))
    }
}

/// A descriptor held only to be given up: with it closed, one accept(2) finds a free
/// slot when the daemon has none.
private struct SpareDescriptor {
    private var fd: Int32 = -1

    init() { reopen() }

    /// Takes a descriptor again if it has none (it fails while there is none to take).
    mutating func reopen() {
        if fd < 0 { fd = open("/dev/null", O_RDONLY | O_CLOEXEC) }
    }

    mutating func close() {
        if fd >= 0 { Glibc.close(fd) }
        fd = -1
    }

    /// Gives the spare up for the next connection on `listener`, waiting for one;
    /// nil if there is no spare, or the accept failed all the same.
    mutating func acceptInItsPlace(_ listener: Int32) -> Int32? {
        guard fd >= 0 else { return nil }
        close()
        let connection = dpfs_accept_cloexec(listener)
        return connection >= 0 ? connection : nil
    }
}
