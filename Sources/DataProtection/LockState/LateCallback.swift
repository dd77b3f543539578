// A closure that another part hands over once it starts (the mount's inode count, a
// pool's hand-off before a wait) and that any thread may call after.
//
// The closure is kept inside a struct, never as a Mutex's own (optional) value: passed
// through the Mutex's generic `inout`, a bare closure comes back wrapped in one more
// reabstraction thunk at every access, so each call ran through all earlier ones and
// `status` grew slower with every request.
import Synchronization

public final class LateCallback<Result>: Sendable {
    private struct Stored: Sendable {
        let call: @Sendable () -> Result
    }

    private let stored = Mutex<Stored?>(nil)

    public init() {}

    /// Has later calls run `call`.
    public func set(_ call: @escaping @Sendable () -> Result) {
        stored.withLock { $0 = Stored(call: call) }
    }

    /// What the closure returns; nil before one is set.
    public func callAsFunction() -> Result? {
        stored.withLock { $0 }?.call()
    }
}
