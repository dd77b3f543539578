// When a thread waiting on the control socket may poll for a while before it sleeps
// (Frame.awaitData). Polling pays only when the CPUs would otherwise sit idle: a
// single caller making call after call, a daemon serving one such caller. While other
// calls are under way, a polling thread would take a CPU from the threads it waits
// for, so then it sleeps at once, and it stops polling as soon as one begins; only
// one thread polls at a time.
//
// A client knows its own calls (`begin`/`end` around each). A daemon also needs to
// know whether other callers are about, busy on their side between requests: one
// connection's thread polls only while the last few requests to begin were all its
// own, and stops when another's begins.
import Synchronization

public enum SocketPolling {
    /// Longer than a keychain call takes the daemon; short enough to be lost in a pause.
    public static let window: Duration = .microseconds(200)
    private static let busy = Atomic<Int>(0)
    private static let polling = Atomic<Bool>(false)
    /// The daemon's side: the connection whose request began last (0: none yet) times
    /// 256, plus how many of the latest requests in a row were its own (at most 255).
    private static let lastCaller = Atomic<Int>(0)
    /// Requests in a row that make a connection the only caller.
    static let streak = 3
    private static let nextConnection = Atomic<Int>(1)

    /// A call (client) or a request (daemon) is under way on this thread.
    public static func begin() { busy.add(1, ordering: .relaxed) }
    public static func end() { busy.subtract(1, ordering: .relaxed) }

    /// How long to poll when `own` of the calls under way are the caller's own.
    public static func window(besides own: Int) -> Duration {
        alone(besides: own) ? window : .zero
    }

    /// Whether no calls but the caller's `own` are under way: a poll goes on while so.
    public static func alone(besides own: Int) -> Bool {
        busy.load(ordering: .relaxed) <= own
    }

    // MARK: The daemon's connections

    /// A number naming one connection of the daemon, for the calls below.
    public static func newConnection() -> Int { nextConnection.add(1, ordering: .relaxed).newValue }

    /// A request of `connection` is under way.
    public static func begin(connection: Int) {
        // Not atomic as a whole: two requests beginning at once may both count, which
        // can only cost one needless poll or one needless sleep.
        let last = lastCaller.load(ordering: .relaxed)
        let run = last >> 8 == connection ? min(last & 0xff + 1, 0xff) : 1
        lastCaller.store(connection << 8 | run, ordering: .relaxed)
        begin()
    }

    /// Whether `connection`, waiting for its next request, is the daemon's only caller
    /// as far as can be told: nothing is under way and the latest requests were its own.
    public static func onlyCaller(_ connection: Int) -> Bool {
        let last = lastCaller.load(ordering: .relaxed)
        return last >> 8 == connection && last & 0xff >= streak && busy.load(ordering: .relaxed) == 0
    }

    /// Calls `ready` until it holds, for at most `window` and while `worthPolling` holds,
    /// and says whether it did. Only one thread polls at a time: another gets false at once.
    public static func poll(upTo window: Duration, while worthPolling: () -> Bool, until ready: () -> Bool) -> Bool {
        guard startPolling() else { return false }
        defer { stopPolling() }
        let deadline = ContinuousClock.now + window
        repeat {
            if ready() { return true }
        } while ContinuousClock.now < deadline && worthPolling()
        return false
    }

    static func startPolling() -> Bool {
        polling.compareExchange(expected: false, desired: true, ordering: .acquiring).exchanged
    }

    static func stopPolling() { polling.store(false, ordering: .releasing) }
}
