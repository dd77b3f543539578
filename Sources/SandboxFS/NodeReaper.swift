// Frees removed files off the request's path. Removing the last name of a file makes the
// backing filesystem free its blocks there and then, inside unlinkat; on ext4 mounted
// with `discard` and without a journal, that waits for the device to discard each block,
// most of an `rm -rf`'s time (docs/benchmarks.md). So unlink moves the file's last name
// into the reapers' directory at the sandbox root (a reserved name, Names.swift), which
// frees nothing, and a few reaper threads unlink it from there, several at a time. (A
// file still open, or still known to the kernel, keeps its blocks until its last
// descriptor closes.) (Holding the file open across the unlinkat instead would keep its
// dentry under the directory, and the rmdir that follows would spin until the reapers
// caught up.) At most `backlog` files wait: beyond that a remover waits for a slot, so
// the space comes back within milliseconds of the rm. Unmounting unlinks whatever still
// waits; a file left there by a crash goes when the next mount clears the directory.
//
// While no reaper thread runs (none could start: RLIMIT_NPROC, a cgroup's pids.max),
// nothing is parked and unlink frees in place; a start is tried again at a removal a
// second or more after the last failure, which is logged once. (Foundation's thread
// start failed silently: files were parked for reapers that never ran, their space never
// came back, and once `backlog` waited every unlink hung.)
import BlockStore
import CLinux
import DPFSProtocol
import Foundation
import Glibc
import Synchronization
import SystemCalls

final class NodeReaper: Sendable {
    static let backlog = 256
    static let threads = 4
    static let namePrefix = "reaped-"
    static let directoryName = ".fuse_hidden-orphans"
    /// How soon after a failed start another is tried.
    static let retryDelay: Duration = .seconds(1)

    private let sandbox: Int32
    /// The reapers' directory once made (at the first removal); -1 before, or if it
    /// cannot be made (then unlink frees in place).
    private let directory = Mutex<Int32>(-1)
    /// A parked name and what to do once it is unlinked.
    private typealias Item = (name: String, then: (@Sendable () -> Void)?)
    private let pending = Mutex<[Item]>([])
    private let serial = Atomic<UInt64>(0)
    private let queued = DispatchSemaphore(value: 0)
    private let slots = DispatchSemaphore(value: NodeReaper.backlog)
    private let reapers = Mutex(Reapers())
    private let startThread: PosixThread.Start
    private let log: @Sendable (String) -> Void

    private struct Reapers {
        var running = 0
        /// When the last start failed, if one did since a start last worked.
        var failedAt: ContinuousClock.Instant?
    }

    /// `sandbox`: the sandbox directory. What a previous mount left in the reapers'
    /// directory goes now (nothing in it is open), and the directory with it.
    /// `startThread`: PosixThread.start; another for tests, to fail at will.
    init(sandbox: Int32, log: @escaping @Sendable (String) -> Void,
         startThread: @escaping PosixThread.Start = { try PosixThread.start(named: $0, $1) }) {
        self.sandbox = sandbox
        self.log = log
        self.startThread = startThread
        guard let stale = try? Self.openDirectory(sandbox) else { return }
        for name in directoryNames(of: stale) ?? [] { unlinkat(stale, name, 0) }
        close(stale)
        unlinkat(sandbox, Self.directoryName, AT_REMOVEDIR)
    }

    /// The reapers' directory, made on first use.
    private func orphanDirectory() throws(Errno) -> Int32 {
        try directory.withLock { (fd) throws(Errno) -> Int32 in
            if fd >= 0 { return fd }
            if mkdirat(sandbox, Self.directoryName, 0o700) != 0 && errno != EEXIST { throw Errno.current }
            fd = try Self.openDirectory(sandbox)
            return fd
        }
    }

    /// Whether a reaper thread runs, once those missing are started: at the first
    /// removal, and after a failed start at the first a `retryDelay` later.
    private func reapersRun() -> Bool {
        let (running, failure) = reapers.withLock { reapers -> (Int, String?) in
            guard reapers.running < Self.threads else { return (reapers.running, nil) }
            if let failedAt = reapers.failedAt, failedAt.duration(to: .now) < Self.retryDelay { return (reapers.running, nil) }
            var failure: PosixThread.StartError?
            while reapers.running < Self.threads, failure == nil {
                do throws(PosixThread.StartError) {
                    _ = try startThread("dpfs-reap-\(reapers.running)") { [self] in loop() }
                    reapers.running += 1
                } catch {
                    failure = error
                }
            }
            // Logged at the first failure of a spell only.
            let firstFailure = failure != nil && reapers.failedAt == nil
            reapers.failedAt = failure == nil ? nil : .now
            guard let failure, firstFailure else { return (reapers.running, nil) }
            let mode = reapers.running == 0 ? "none runs, so unlink frees in place"
                : "\(reapers.running) of \(Self.threads) run"
            return (reapers.running, "removed files' reapers: \(failure); \(mode), and a start is tried again every second")
        }
        failure.map(log)
        return running > 0
    }

    /// Makes the reapers' directory and starts their threads now, not at the first
    /// removal: a thread inherits its creator's scheduling class, and the io_uring
    /// queue threads, which serve removals there, are idle-class (FuseLoop/ring_queues.c).
    func start() {
        _ = try? orphanDirectory()
        _ = reapersRun()
    }

    /// Whether the reapers' directory is there (made at the first removal).
    var holdsDirectory: Bool { directory.withLock { $0 >= 0 } }

    private static func openDirectory(_ sandbox: Int32) throws(Errno) -> Int32 {
        try Errno.check(openat(sandbox, directoryName, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW))
    }

    /// Removes `name` in `directory`, a file with one link: moves it to the orphan
    /// directory to be unlinked soon, then runs `then` (Inode.discardIfUnlinked). False
    /// if it could not be moved, or no reaper runs to unlink it (nothing changed,
    /// `then` not run).
    func remove(_ directory: Int32, _ name: UnsafePointer<CChar>, then: (@Sendable () -> Void)? = nil) -> Bool {
        guard let orphans = try? orphanDirectory(), reapersRun() else { return false }
        let parked = Self.namePrefix + String(serial.add(1, ordering: .relaxed).newValue)
        slots.wait()
        guard renameat2(directory, name, orphans, parked, RenameFlag.noReplace) == 0 else {
            slots.signal()
            return false
        }
        pending.withLock { $0.append((parked, then)) }
        queued.signal()
        return true
    }

    private func loop() {
        while true {
            queued.wait()
            let next = pending.withLock { $0.isEmpty ? nil : $0.removeFirst() }
            if let next { reap(next, in: directory.withLock { $0 }) }
            slots.signal()
        }
    }

    private func reap(_ item: Item, in orphans: Int32) {
        unlinkat(orphans, item.name, 0)
        item.then?()
    }

    /// Unlinks every file still waiting, on the calling thread: at unmount, so that
    /// nothing removed outlives the mount.
    func drain() {
        let orphans = directory.withLock { $0 }
        guard orphans >= 0 else { return }
        let items = pending.withLock { items in
            defer { items.removeAll() }
            return items
        }
        for item in items { reap(item, in: orphans) }
    }
}
