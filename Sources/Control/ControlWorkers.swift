// The threads that serve the control sockets' connections: about one per CPU, all
// waiting on one epoll set in which each idle connection is armed for one wake-up
// (EPOLLONESHOT). A worker takes whichever connection has a request, answers it, arms
// it again and takes the next ready one without sleeping, so many callers on few CPUs
// cost the daemon no thread switch per call (a thread per connection cost two).
// While one connection is the only caller, the worker that answered it polls its
// socket for the next request instead of sleeping, as a thread per connection did.
//
// A worker never waits on a client or a person: before anything that may (a frame
// still arriving, a reply the client is slow to take, a prompt, a passcode's key
// derivation, a stream or session) it hands its place to a new worker (`release`),
// finishes that one connection's business, and leaves. A connection left idle for
// `idleLimit` is closed, by a timer in the same set that runs only while there are
// connections, so an idle daemon is never woken.
import CLinux
import DataProtection
import DPFSProtocol
import Foundation
import Glibc

final class ControlWorkers: Sendable {
    static let idleLimit: Duration = .seconds(30)
    /// The idle timer's key in the epoll set; connections' ids start above it.
    private static let timerKey: UInt64 = 0

    /// What becomes of a connection once its request is answered.
    enum Disposition { case keep, close }
    typealias Serve = @Sendable (ControlConnection) -> Disposition

    private struct Entry {
        let connection: ControlConnection
        /// When it was last armed; nil while a thread serves it.
        var idleSince: ContinuousClock.Instant?
    }

    private struct State {
        var entries: [Int: Entry] = [:]
        var workers: Set<pthread_t> = []
        var timerSet = false
        var serve: Serve?
    }

    private let epoll: Int32
    private let timer: Int32
    private let state = PosixMutex(State())

    init() throws {
        epoll = epoll_create1(Int32(EPOLL_CLOEXEC))
        guard epoll >= 0 else { throw SystemError("epoll_create1", "control workers") }
        timer = dpfs_timer_create()
        guard timer >= 0, dpfs_epoll_arm(epoll, EPOLL_CTL_ADD, timer, Self.timerKey) == 0 else {
            throw SystemError("timerfd_create", "control workers")
        }
    }

    /// Starts `count` workers that answer requests with `serve`.
    func start(count: Int, serve: @escaping Serve) {
        state.withLock { $0.serve = serve }
        for _ in 0..<count { startWorker() }
    }

    /// Serves `connection` from now on: its requests go to whichever worker is free.
    func add(_ connection: ControlConnection) {
        state.withLock { state in
            state.entries[connection.id] = Entry(connection: connection, idleSince: .now)
            if !state.timerSet { state.timerSet = setTimer(after: Self.idleLimit) }
            // Under the lock: a wake-up finds the entry there.
            if dpfs_epoll_arm(epoll, EPOLL_CTL_ADD, connection.fd, UInt64(connection.id)) != 0 {
                state.entries[connection.id] = nil
                close(connection.fd)
            }
        }
    }

    /// On a worker's thread: a new worker takes its place, and this thread leaves the
    /// pool once it has finished with its connection. Elsewhere it does nothing.
    func release() {
        let wasWorker = state.withLock { $0.workers.remove(pthread_self()) != nil }
        if wasWorker { startWorker() }
    }

    private func startWorker() {
        let thread = Thread { [self] in
            dpfs_name_thread("dpfs-control")
            work()
        }
        thread.start()
    }

    private func work() {
        let me = pthread_self()
        guard let serve = state.withLock({ state -> Serve? in
            state.workers.insert(me)
            return state.serve
        }) else { return }
        while state.withLock({ $0.workers.contains(me) }) {
            var key: UInt64 = 0
            guard dpfs_epoll_next(epoll, -1, &key) == 1 else { continue }
            if key == Self.timerKey {
                closeIdleConnections()
            } else if let connection = claim(Int(key)) {
                var disposition = serve(connection)
                while disposition == .keep, nextRequestComes(on: connection) { disposition = serve(connection) }
                finish(connection, disposition)
            }
        }
    }

    /// While `connection` is the daemon's only caller (SocketPolling), whether its next
    /// request comes within SocketPolling's window: the worker polls its socket rather
    /// than arming it and sleeping, which would cost a wake-up of an idle CPU per call.
    /// Polling the epoll set instead would not do: the kernel wakes a sleeping worker
    /// for the request all the same, and the poller keeps it from a CPU.
    private func nextRequestComes(on connection: ControlConnection) -> Bool {
        guard SocketPolling.onlyCaller(connection.id) else { return false }
        return SocketPolling.poll(upTo: SocketPolling.window, while: { SocketPolling.onlyCaller(connection.id) }) {
            var byte: UInt8 = 0
            return recv(connection.fd, &byte, 1, Int32(MSG_PEEK) | Int32(MSG_DONTWAIT)) >= 0 || (errno != EAGAIN && errno != EINTR)
        }
    }

    /// The connection behind a wake-up, now this thread's; nil when it is gone (closed
    /// for idleness just before).
    private func claim(_ id: Int) -> ControlConnection? {
        state.withLock { state in
            guard let entry = state.entries[id], entry.idleSince != nil else { return nil }
            state.entries[id]?.idleSince = nil
            return entry.connection
        }
    }

    private func finish(_ connection: ControlConnection, _ disposition: Disposition) {
        state.withLock { state in
            switch disposition {
            case .keep:
                state.entries[connection.id]?.idleSince = .now
                // Armed under the lock, after the entry is marked idle: the next wake-up
                // may come at once, to another worker.
                if dpfs_epoll_arm(epoll, EPOLL_CTL_MOD, connection.fd, UInt64(connection.id)) == 0 { return }
                fallthrough
            case .close:
                state.entries[connection.id] = nil
                dpfs_epoll_remove(epoll, connection.fd)
                close(connection.fd)
            }
        }
    }

    /// Closes every connection idle for `idleLimit`, then sets the timer for the next one
    /// that may be, if any connection is left.
    private func closeIdleConnections() {
        var expirations: UInt64 = 0
        _ = read(timer, &expirations, MemoryLayout<UInt64>.size)
        let now = ContinuousClock.now
        state.withLock { state in
            var next: Duration?
            for (id, entry) in state.entries {
                // One being served is at least a whole limit away from closing.
                let idle = entry.idleSince.map { now - $0 } ?? .zero
                if idle >= Self.idleLimit {
                    state.entries[id] = nil
                    dpfs_epoll_remove(epoll, entry.connection.fd)
                    close(entry.connection.fd)
                } else {
                    next = min(next ?? Self.idleLimit, Self.idleLimit - idle)
                }
            }
            state.timerSet = next.map(setTimer(after:)) ?? false
        }
        dpfs_epoll_arm(epoll, EPOLL_CTL_MOD, timer, Self.timerKey)
    }

    /// Sets the idle timer; whether it is set.
    private func setTimer(after delay: Duration) -> Bool {
        let (seconds, attoseconds) = max(delay, .milliseconds(1)).components  // zero would disarm it
        return dpfs_timer_set(timer, seconds, Int(attoseconds / 1_000_000_000)) == 0
    }
}
