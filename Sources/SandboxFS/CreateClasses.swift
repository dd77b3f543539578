// A class given at creation, as iOS's open_dprotected_np takes one: a thread sets
// `user.dpfs.create-protection` on a directory to a class name, and its next file
// created in that directory (create, mknod, O_TMPFILE) takes that class instead of
// the directory's — also where the directory's own class is unavailable (a `none`
// file in an untilFirstAuth directory before the first unlock), as iOS allows. The
// new file's key is wrapped under the class given, so a class whose key is not at
// hand still refuses the create (EPERM). FUSE carries no class in a create, so the
// two calls are matched by the caller's thread ID, which the kernel puts in every
// request; removing the attribute (or a create) ends the intent, and an intent left
// behind lapses after a few seconds. DataProtectionKit's writing calls use it.
import DataProtection
import Glibc
import Synchronization
import SystemCalls

final class CreateClasses: Sendable {
    private struct Key: Hashable {
        let thread: pid_t
        let directory: InodeKey
    }

    private struct Intent {
        let protectionClass: ProtectionClass
        let deadline: ContinuousClock.Instant
    }

    /// Long enough for the create that follows, short enough that a thread ID reused
    /// by another process meets no stale intent in practice.
    static let lifetime = Duration.seconds(10)
    /// Bounded: a caller that sets intents and never creates cannot grow the table.
    static let capacity = 4096

    private let intents = Mutex<[Key: Intent]>([:])

    /// Records that `thread`'s next create in `directory` takes `protectionClass`;
    /// EAGAIN when the table is full of live intents. Thread 0 (a caller in a PID
    /// namespace the mount cannot see) cannot be told apart: EINVAL.
    func set(_ protectionClass: ProtectionClass, thread: pid_t, directory: InodeKey) throws(Errno) {
        guard thread > 0 else { throw Errno.invalid }
        let now = ContinuousClock.now
        let key = Key(thread: thread, directory: directory)
        try intents.withLock { (table) throws(Errno) in
            if table.count >= Self.capacity { table = table.filter { $0.value.deadline > now } }
            guard table.count < Self.capacity || table[key] != nil else { throw Errno(EAGAIN) }
            table[key] = Intent(protectionClass: protectionClass, deadline: now + Self.lifetime)
        }
    }

    func clear(thread: pid_t, directory: InodeKey) {
        _ = intents.withLock { $0.removeValue(forKey: Key(thread: thread, directory: directory)) }
    }

    /// The class `thread` gave for its next create in `directory`, taken (once).
    func take(thread: pid_t, directory: InodeKey) -> ProtectionClass? {
        let now = ContinuousClock.now
        return intents.withLock { table -> ProtectionClass? in
            guard !table.isEmpty, let intent = table.removeValue(forKey: Key(thread: thread, directory: directory)),
                  intent.deadline > now else { return nil }
            return intent.protectionClass
        }
    }
}
