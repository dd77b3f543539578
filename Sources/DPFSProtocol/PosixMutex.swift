// A value behind glibc's adaptive mutex, for the short critical sections that every
// keychain call passes on both sides of the socket (a connection pool's take and give,
// the daemon's worker hand-off). The standard library's Mutex is a priority-inheritance
// futex on Linux: once contended, each unlock hands the lock to a sleeping waiter
// through the kernel, and every other thread queues behind that wake-up. With eight
// callers on two CPUs that convoy cost more than the calls' own work. glibc's mutex
// lets a running thread take a lock just released, spins briefly, and then sleeps.
import Glibc

public final class PosixMutex<Value> {
    private var value: Value
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>

    public init(_ value: Value) {
        self.value = value
        mutex = .allocate(capacity: 1)
        var attributes = pthread_mutexattr_t()
        pthread_mutexattr_init(&attributes)
        pthread_mutexattr_settype(&attributes, Int32(PTHREAD_MUTEX_ADAPTIVE_NP))
        pthread_mutex_init(mutex, &attributes)
        pthread_mutexattr_destroy(&attributes)
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    public func withLock<R: ~Copyable, E: Error>(_ body: (inout Value) throws(E) -> R) throws(E) -> R {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body(&value)
    }
}

// @unchecked: `value` is only touched between lock and unlock in `withLock`, and only
// a Sendable value may be shared so.
extension PosixMutex: @unchecked Sendable where Value: Sendable {}
