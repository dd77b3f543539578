// When a thread waiting on the control socket may poll for a while before it sleeps
// (Frame.awaitData). Polling pays only when the CPUs would otherwise sit idle: a
// single caller making call after call, a daemon serving one such caller. While other
// calls of the process are under way, a polling thread would take a CPU from the
// threads it waits for, so then it sleeps at once; and only one thread polls at a time.
import Synchronization

public enum SocketPolling {
    /// Longer than a keychain call takes the daemon; short enough to be lost in a pause.
    public static let window: Duration = .microseconds(200)
    private static let busy = Atomic<Int>(0)
    private static let polling = Atomic<Bool>(false)

    /// A call (client) or a request (daemon) is under way on this thread.
    public static func begin() { busy.add(1, ordering: .relaxed) }
    public static func end() { busy.subtract(1, ordering: .relaxed) }

    /// How long to poll when `own` of the calls under way are the caller's own.
    public static func window(besides own: Int) -> Duration {
        busy.load(ordering: .relaxed) <= own ? window : .zero
    }

    static func startPolling() -> Bool {
        polling.compareExchange(expected: false, desired: true, ordering: .acquiring).exchanged
    }

    static func stopPolling() { polling.store(false, ordering: .releasing) }
}
