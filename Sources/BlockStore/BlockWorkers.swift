// Helper threads that seal or open part of one large request's blocks while the FUSE
// worker thread that received it does the rest. The kernel sends a sequential write's
// 1 MiB requests one at a time (without writeback caching), so without this one core
// does all the sealing of a dd or cp while the others idle. One helper per core
// beyond the first (at most 3); a request that finds no helper idle does all its work
// itself, so helpers never queue work. Synchronous: the caller waits for its helpers.
// A helper whose thread cannot start (RLIMIT_NPROC, a cgroup's pids.max) is left out:
// its share falls to the caller. (Foundation's thread start fails silently, and the
// caller would wait for ever on a helper that never ran: the file's I/O would hang.)
import DPFSProtocol
import Foundation
import Glibc
import Synchronization

/// Starts the seal helpers now, on the calling thread, not at the first large request:
/// a thread inherits its creator's scheduling class, and the io_uring queue threads,
/// which serve such requests, are idle-class (FuseLoop/ring_queues.c). Gives a line to
/// log when some could not start (requests then do their share themselves).
public func startSealHelpers() -> String? {
    let workers = BlockWorkers.shared
    return workers.startFailure.map {
        "seal helpers: \($0); \(workers.helperCount) of \(workers.helpersWanted) started, large requests do the rest themselves"
    }
}

final class BlockWorkers: @unchecked Sendable {
    // @unchecked: `helpers` is guarded by its mutex; each Helper by its own.
    static let shared = BlockWorkers(helpers: max(0, min(ProcessInfo.processInfo.activeProcessorCount, 4) - 1))

    /// Requests smaller than this many blocks are not split: waking a helper costs
    /// more than it saves.
    static let minimumBlocks = 64

    private let idle: Mutex<[Helper]>
    /// The helpers whose threads started.
    let helperCount: Int
    let helpersWanted: Int
    /// Why a helper's thread did not start, if one did not.
    let startFailure: PosixThread.StartError?

    /// `startThread`: PosixThread.start; another for tests, to fail at will.
    init(helpers: Int, startThread: PosixThread.Start = { try PosixThread.start(named: $0, $1) }) {
        var started: [Helper] = []
        var failure: PosixThread.StartError?
        for _ in 0..<helpers {
            let helper = Helper()
            do throws(PosixThread.StartError) {
                _ = try startThread("dpfs-seal") { helper.loop() }
                started.append(helper)
            } catch {
                failure = error
            }
        }
        helperCount = started.count
        helpersWanted = helpers
        startFailure = failure
        idle = Mutex(started)
    }

    /// Splits `range` into up to 1 + helpers contiguous parts and runs `body` on each,
    /// the first part on the calling thread; returns whether every part returned true.
    func run(_ range: Range<Int>, _ body: (Range<Int>) -> Bool) -> Bool {
        guard helperCount > 0, range.count >= Self.minimumBlocks else { return body(range) }
        let taken: [Helper] = idle.withLock { helpers in
            let n = min(helpers.count, range.count / (Self.minimumBlocks / 2) - 1)
            guard n > 0 else { return [] }
            let taken = Array(helpers.suffix(n))
            helpers.removeLast(n)
            return taken
        }
        guard !taken.isEmpty else { return body(range) }
        defer { idle.withLock { $0.append(contentsOf: taken) } }
        let parts = taken.count + 1
        let step = (range.count + parts - 1) / parts
        func part(_ index: Int) -> Range<Int> {
            let lower = range.lowerBound + index * step
            return lower..<min(range.upperBound, lower + step)
        }
        return withoutActuallyEscaping(body) { escapable in
            let job = Job(escapable)
            for (index, helper) in taken.enumerated() { helper.start(job, part(index + 1)) }
            var ok = body(part(0))
            for helper in taken { ok = helper.wait() && ok }
            return ok
        }
    }

    /// A non-Sendable closure handed to a helper; the caller waits for it to finish
    /// before the closure's captures go away.
    final class Job: @unchecked Sendable {
        let body: (Range<Int>) -> Bool
        init(_ body: @escaping (Range<Int>) -> Bool) { self.body = body }
    }

    final class Helper: @unchecked Sendable {
        // @unchecked: every field is read and written under `mutex`.
        private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
        private let wake = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)
        private let finished = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)
        private var job: Job?
        private var range: Range<Int> = 0..<0
        private var result: Bool?

        /// Its thread runs `loop`, and keeps it for as long as it runs.
        init() {
            pthread_mutex_init(mutex, nil)
            pthread_cond_init(wake, nil)
            pthread_cond_init(finished, nil)
        }

        func start(_ job: Job, _ range: Range<Int>) {
            pthread_mutex_lock(mutex)
            self.job = job
            self.range = range
            result = nil
            pthread_cond_signal(wake)
            pthread_mutex_unlock(mutex)
        }

        func wait() -> Bool {
            pthread_mutex_lock(mutex)
            while result == nil { pthread_cond_wait(finished, mutex) }
            let ok = result ?? false
            result = nil
            pthread_mutex_unlock(mutex)
            return ok
        }

        func loop() {
            pthread_mutex_lock(mutex)
            while true {
                guard let current = job else {
                    pthread_cond_wait(wake, mutex)
                    continue
                }
                let range = self.range
                pthread_mutex_unlock(mutex)
                let ok = current.body(range)
                pthread_mutex_lock(mutex)
                job = nil
                result = ok
                pthread_cond_signal(finished)
            }
        }
    }
}
