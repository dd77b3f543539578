// How many connections the app sessions' sockets may hold open. Each is a descriptor
// of the daemon's, and an app may connect as often as it likes: one that opened
// hundreds took every descriptor the daemon had, and then opens through the mount
// failed (EMFILE) and the owner's socket let in one connection at a time, through its
// reserve. Now one app socket holds at most an eighth of the daemon's descriptor
// limit (256 at most) and all of them together a quarter (1,024 at most): the rest
// stays the mount's and the owner's. The limit is read at each connection, so a
// limit changed under the daemon (prlimit) counts at once.
import DPFSProtocol
import Glibc
import Synchronization

final class AppConnectionLimit: Sendable {
    static let mostPerSocket = 256
    static let mostInAll = 1024

    /// App connections open on all sockets.
    private let open = PosixMutex(0)

    /// The caps under a descriptor limit of `limit`.
    static func caps(descriptorLimit limit: Int) -> (perSocket: Int, inAll: Int) {
        let inAll = min(mostInAll, limit / 4)
        return (min(mostPerSocket, limit / 8), inAll)
    }

    /// The daemon's descriptor limit now (its soft RLIMIT_NOFILE).
    static func descriptorLimit() -> Int {
        var limit = rlimit()
        guard getrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return 1024 }  // Linux's default
        return Int(clamping: limit.rlim_cur)
    }

    /// The count of one app socket's connections, for its accept thread.
    func socket(of bundleID: String) -> AppSocketConnections {
        AppSocketConnections(bundleID: bundleID, all: self)
    }

    /// Takes one place among all app connections, if fewer than `cap` are open.
    fileprivate func takeOne(cap: Int) -> Bool {
        open.withLock { open in
            guard open < cap else { return false }
            open += 1
            return true
        }
    }

    fileprivate func giveOne() { open.withLock { $0 -= 1 } }
}

/// One app socket's open connections.
final class AppSocketConnections: Sendable {
    /// What became of a connection: a place held until it closes, or a refusal (with
    /// the line for the daemon's log, for the first of a spell).
    enum Admission {
        case admitted(AppConnectionPlace)
        case refused(reply: String, log: String?)
    }

    private struct State {
        var open = 0
        /// Connections are being refused, and the log has said so.
        var refusing = false
    }

    let bundleID: String
    private let all: AppConnectionLimit
    private let state = PosixMutex(State())

    fileprivate init(bundleID: String, all: AppConnectionLimit) {
        self.bundleID = bundleID
        self.all = all
    }

    /// A place for one more connection, unless this socket or all of them hold as many
    /// as `descriptorLimit` allows.
    func admit(descriptorLimit: Int = AppConnectionLimit.descriptorLimit()) -> Admission {
        let caps = AppConnectionLimit.caps(descriptorLimit: descriptorLimit)
        return state.withLock { state in
            let refusal: String
            if state.open >= caps.perSocket {
                refusal = "\(bundleID) has \(state.open) connections open, as many as one app may"
            } else if !all.takeOne(cap: caps.inAll) {
                refusal = "the apps have \(caps.inAll) connections open, as many as they may together"
            } else {
                state.open += 1
                state.refusing = false
                return .admitted(AppConnectionPlace(self))
            }
            let reply = "this daemon is refusing the connection: \(refusal); close one first"
            defer { state.refusing = true }
            return .refused(reply: reply, log: state.refusing ? nil
                            : "control socket: \(refusal) (a share of its \(descriptorLimit) descriptors); "
                              + "more are closed as they come until one ends")
        }
    }

    fileprivate func giveBack() {
        state.withLock { $0.open -= 1 }
        all.giveOne()
    }
}

/// One app connection's place, given back once when it closes.
final class AppConnectionPlace: Sendable {
    private let socket: AppSocketConnections
    private let given = Atomic<Bool>(false)

    fileprivate init(_ socket: AppSocketConnections) { self.socket = socket }

    func giveBack() {
        guard !given.exchange(true, ordering: .acquiringAndReleasing) else { return }
        socket.giveBack()
    }
}
