// The processes that hold app sessions open, by the connection that opened them, for
// the owner's status reply (AppRun): what `dpfs unmount` must not pull the mount from.
// An unmount that has found none holds the sessions shut until it ends (`beginUnmount`):
// a run that opened between its check and its detach would hold the mount from a mount
// namespace of its own.
import DPFSProtocol

final class AppRuns: Sendable {
    private struct State {
        var runs: [Int: AppRun] = [:]
        /// How many unmounts have found no run and not yet ended.
        var unmounts = 0
    }

    /// Whether a connection may open an app session.
    enum Admission: Equatable {
        /// Its first session: the run is recorded.
        case first
        /// It holds one already.
        case again
        /// An unmount is under way.
        case refused
    }

    private let state = PosixMutex(State())

    /// Records `run` for `connection`, opening its first session, unless an unmount is
    /// under way.
    func admit(_ run: AppRun, connection: Int) -> Admission {
        state.withLock { state in
            guard state.unmounts == 0 else { return .refused }
            guard state.runs[connection] == nil else { return .again }
            state.runs[connection] = run
            return .first
        }
    }

    /// Names the app of `connection`'s run, once its session has said which it is.
    func name(_ app: String, connection: Int) {
        state.withLock { $0.runs[connection]?.app = app }
    }

    func remove(connection: Int) {
        _ = state.withLock { $0.runs.removeValue(forKey: connection) }
    }

    /// Every run open now, by pid.
    func current() -> [AppRun] {
        state.withLock { Self.sorted($0.runs) }
    }

    /// The runs open now; if there are none, no session opens from now until
    /// `endUnmount`.
    func beginUnmount() -> [AppRun] {
        state.withLock { state in
            guard state.runs.isEmpty else { return Self.sorted(state.runs) }
            state.unmounts += 1
            return []
        }
    }

    /// Ends an unmount that `beginUnmount` let through.
    func endUnmount() {
        state.withLock { $0.unmounts = max(0, $0.unmounts - 1) }
    }

    private static func sorted(_ runs: [Int: AppRun]) -> [AppRun] {
        runs.values.sorted { $0.pid < $1.pid }
    }
}
