// A value behind a reader-writer lock: the lock-state manager's core, which every
// keychain call and file open reads (is a passcode set, use this class key) and only
// transitions change. Under a Mutex those reads queued behind one another, each
// holding the lock through its crypto; readers now share it. Writers are preferred,
// so a stream of readers can never hold a lock (a wipe) off.
import Glibc

final class ReadWriteLocked<Value: ~Copyable>: @unchecked Sendable {
    // @unchecked: `value` is only touched inside `lock`'s read (shared) or write
    // (exclusive) sections below.
    private var value: Value
    private let lock: UnsafeMutablePointer<pthread_rwlock_t>

    init(_ value: consuming Value) {
        self.value = value
        lock = .allocate(capacity: 1)
        var attributes = pthread_rwlockattr_t()
        pthread_rwlockattr_init(&attributes)
        pthread_rwlockattr_setkind_np(&attributes, Int32(PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP))
        pthread_rwlock_init(lock, &attributes)
        pthread_rwlockattr_destroy(&attributes)
    }

    deinit {
        pthread_rwlock_destroy(lock)
        lock.deallocate()
    }

    /// Exclusive: no reader or other writer runs meanwhile.
    func withLock<R>(_ body: (inout Value) throws -> R) rethrows -> R {
        pthread_rwlock_wrlock(lock)
        defer { pthread_rwlock_unlock(lock) }
        return try body(&value)
    }

    /// Exclusive, if no one holds the lock now; nil (`body` not run) otherwise. Safe
    /// where the caller may itself be inside `withReadLock`.
    func withLockIfFree<R>(_ body: (inout Value) throws -> R) rethrows -> R? {
        guard pthread_rwlock_trywrlock(lock) == 0 else { return nil }
        defer { pthread_rwlock_unlock(lock) }
        return try body(&value)
    }

    /// Shared with other readers. Not re-entrant: a reader that asks again while a
    /// writer waits would wait for itself.
    func withReadLock<R>(_ body: (borrowing Value) throws -> R) rethrows -> R {
        pthread_rwlock_rdlock(lock)
        defer { pthread_rwlock_unlock(lock) }
        return try body(value)
    }
}
