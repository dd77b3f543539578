// The mount's check, bounded in time. A daemon stopped by a signal or a debugger never
// answers the lookups through which its mount is checked and names its socket (the
// mountpoint's stat, the root's getxattr), and no socket timeout bounds those: every
// client would wait for as long as it stays stopped. The check runs on a thread of its
// own, which the caller leaves waiting once its time is up; that thread ends when the
// daemon resumes or dies, or with the process.
import Dispatch
import Synchronization

extension OwnedMount {
    /// OwnedMount(mountpoint), or nil when `seconds` pass without an answer. With no
    /// thread to spare, the check runs on the caller's, unbounded as before.
    static func within(_ seconds: Double, _ mountpoint: String) throws(Refusal) -> OwnedMount? {
        let outcome = Mutex<Result<OwnedMount, Refusal>?>(nil)
        let done = DispatchSemaphore(value: 0)
        let started = try? PosixThread.start(named: "dpfs-mount-ask") {
            let result = Result { () throws(Refusal) -> OwnedMount in try OwnedMount(mountpoint) }
            outcome.withLock { $0 = result }
            done.signal()
        }
        guard started != nil else { return try OwnedMount(mountpoint) }
        guard done.wait(timeout: .now() + seconds) == .success, let result = outcome.withLock({ $0 }) else { return nil }
        return try result.get()
    }
}
