// The processes that hold app sessions open, by the connection that opened them, for
// the owner's status reply (AppRun): what `dpfs unmount` must not pull the mount from.
import DPFSProtocol

final class AppRuns: Sendable {
    private let open = PosixMutex<[Int: AppRun]>([:])

    /// Records `run` for `connection`, whose first session it is; later ones add nothing.
    func add(_ run: AppRun, connection: Int) {
        open.withLock { runs in
            if runs[connection] == nil { runs[connection] = run }
        }
    }

    func remove(connection: Int) {
        _ = open.withLock { $0.removeValue(forKey: connection) }
    }

    /// Every run open now, by pid.
    func current() -> [AppRun] {
        open.withLock { $0.values.sorted { $0.pid < $1.pid } }
    }
}
