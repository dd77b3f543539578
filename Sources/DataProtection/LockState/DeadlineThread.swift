// The one thread that carries out the lock's deadlines when they fall due: the wipe at
// the end of the grace period, the user-inactive expiry, the inactivity reboot. It is
// started with the daemon and waits on a timer of its own, so that a deadline needs no
// thread to be found when it falls due. (A libdispatch timer needs a worker thread to
// run: a daemon whose user had reached RLIMIT_NPROC would carry out the lock only once
// threads were free again, and keep the complete key till then.)
// Keys are never kept for want of it: every check of a class made after its deadline
// finds the class gone (LockStateManager); this thread revokes what open files hold
// and tells listeners, as close to the deadline as the machine lets it.
import CLinux
import DPFSProtocol
import Glibc

final class DeadlineThread: @unchecked Sendable {
    // @unchecked: `rearmed` and `stopping` are read and written under `mutex` only;
    // `timer` is set once.
    private let timer: Int32
    private let mutex = PosixMutex(State())

    private struct State {
        /// Someone set the timer to wake the thread since it last looked: it must not
        /// be set back to the deadline it found before.
        var rearmed = false
        var stopping = false
    }

    init() throws(PosixThread.StartError) {
        timer = dpfs_boot_timer_create()
        guard timer >= 0 else { throw PosixThread.StartError(code: errno) }
    }

    deinit {
        close(timer)
    }

    /// Starts the thread: it runs `runDue`, which carries out what is due and gives the
    /// next deadline on the boot clock (nil: none), again at that deadline and at every
    /// `wake`, until `stop`.
    func start(_ runDue: @escaping @Sendable () -> Double?) throws(PosixThread.StartError) {
        try PosixThread.start(named: "dpfs-deadlines") { [self] in loop(runDue) }
    }

    /// Has the thread look at the deadlines again now (one was set or moved).
    func wake() {
        mutex.withLock { state in
            state.rearmed = true
            _ = dpfs_boot_timer_set(timer, 0)
        }
    }

    /// Ends the thread once it has finished what it is doing.
    func stop() {
        mutex.withLock { state in
            state.stopping = true
            _ = dpfs_boot_timer_set(timer, 0)
        }
    }

    private func loop(_ runDue: @Sendable () -> Double?) {
        while true {
            let stopping = mutex.withLock { state in
                state.rearmed = false
                return state.stopping
            }
            if stopping { return }
            let started = dpfs_boot_clock()
            let next = runDue()
            // A deadline that was due and did not settle (it should) is looked at again
            // a second later, not at once in a loop.
            let at = next.map { $0 > started ? $0 : started + 1 } ?? -1
            mutex.withLock { state in
                if !state.rearmed { _ = dpfs_boot_timer_set(timer, at) }
            }
            var expirations: UInt64 = 0
            _ = read(timer, &expirations, MemoryLayout<UInt64>.size)
        }
    }
}
