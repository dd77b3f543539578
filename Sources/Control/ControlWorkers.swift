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
//
// A pool never shrinks for want of threads (the daemon at its RLIMIT_NPROC, say): a
// worker whose place no new thread can take keeps it and is back once done, and the
// last worker free to serve stays free (`release` says false: its caller must not
// wait). A place kept so, or one no thread could fill at the start, goes to a new
// thread as soon as one starts: tried at the next connection and every second. The
// first failure of a spell is logged. Before, a release whose thread silently never
// ran lost its place, and two frames arriving in parts at such a moment left the
// socket with no worker at all, never to answer again.
import CLinux
import DataProtection
import DPFSProtocol
import Foundation
import Glibc

final class ControlWorkers: Sendable {
    static let idleLimit: Duration = .seconds(30)
    /// How soon a place no thread could take is offered to a new one again.
    static let retryDelay: Duration = .seconds(1)
    /// The idle timer's key in the epoll set; connections' ids start above it.
    private static let timerKey: UInt64 = 0

    /// What becomes of a connection once its request is answered.
    enum Disposition { case keep, close }
    /// Serves a connection's request; `peeked` is what the worker's poll saw waiting on
    /// it (nil when an epoll wake-up brought the worker, which has not looked yet).
    typealias Serve = @Sendable (ControlConnection, _ peeked: FrameArrival?) -> Disposition

    private struct Entry {
        let connection: ControlConnection
        /// When it was last armed; nil while a thread serves it.
        var idleSince: ContinuousClock.Instant?
    }

    private struct State {
        var entries: [Int: Entry] = [:]
        /// The pool's threads.
        var members: Set<pthread_t> = []
        /// Members away on one connection's business whose places no new thread could
        /// take: they come back when done, unless a new thread has taken the place.
        var away: Set<pthread_t> = []
        /// Places no thread holds: starts that failed.
        var vacant = 0
        /// When the timer fires, if it is set.
        var timerDue: ContinuousClock.Instant?
        /// A failure to start a thread was logged, and no thread has started since.
        var startFailing = false
        var serve: Serve?
    }

    /// The workers' thread name.
    private let name: String
    private let log: @Sendable (String) -> Void
    /// PosixThread.start; another for tests, to fail at will.
    private let startThread: PosixThread.Start
    private let epoll: Int32
    private let timer: Int32
    private let state = PosixMutex(State())

    init(name: String, log: @escaping @Sendable (String) -> Void,
         startThread: @escaping PosixThread.Start = { try PosixThread.start(named: $0, $1) }) throws {
        self.name = name
        self.log = log
        self.startThread = startThread
        epoll = epoll_create1(Int32(EPOLL_CLOEXEC))
        guard epoll >= 0 else { throw SystemError("epoll_create1", "control workers") }
        timer = dpfs_timer_create()
        guard timer >= 0, dpfs_epoll_arm(epoll, EPOLL_CTL_ADD, timer, Self.timerKey) == 0 else {
            throw SystemError("timerfd_create", "control workers")
        }
    }

    /// Starts `count` workers that answer requests with `serve`; the pool keeps that size.
    func start(count: Int, serve: @escaping Serve) {
        let failure = state.withLock { state -> String? in
            state.serve = serve
            state.vacant = count
            return fillPlaces(&state)
        }
        failure.map(log)
    }

    /// Serves `connection` from now on: its requests go to whichever worker is free.
    func add(_ connection: ControlConnection) {
        let failure = state.withLock { state -> String? in
            state.entries[connection.id] = Entry(connection: connection, idleSince: .now)
            if state.timerDue == nil { setTimer(&state, after: Self.idleLimit) }
            // Under the lock: a wake-up finds the entry there.
            if dpfs_epoll_arm(epoll, EPOLL_CTL_ADD, connection.fd, UInt64(connection.id)) != 0 {
                state.entries[connection.id] = nil
                connection.close()
            }
            // A pool owed places tries again now: one with no thread left reads no timer.
            return fillPlaces(&state)
        }
        failure.map(log)
    }

    /// On a worker's thread, before it waits on a client or a person: a new worker takes
    /// its place, and this thread leaves the pool once it has finished with its
    /// connection. When no thread can start, it keeps its place and comes back; false
    /// then if it is the pool's last worker free to serve, which must not wait: it stays
    /// free, and its caller does what needs no wait. Elsewhere it does nothing (true).
    @discardableResult
    func release() -> Bool {
        let me = pthread_self()
        var failure: String?
        let free = state.withLock { state -> Bool in
            guard state.members.contains(me), !state.away.contains(me) else { return true }
            do throws(PosixThread.StartError) {
                try startWorker(&state)
                state.members.remove(me)
                return true
            } catch {
                failure = noteFailure(error, &state)
                guard state.members.count - state.away.count > 1 else { return false }
                state.away.insert(me)
                setTimer(&state, after: Self.retryDelay)
                return true
            }
        }
        failure.map(log)
        return free
    }

    /// Gives the places owed (vacant ones, and those of members away) to new threads
    /// while they start; when one does not, sets the retry. What to log, if anything.
    private func fillPlaces(_ state: inout State) -> String? {
        while state.vacant > 0 || !state.away.isEmpty {
            do throws(PosixThread.StartError) {
                try startWorker(&state)
            } catch {
                setTimer(&state, after: Self.retryDelay)
                return noteFailure(error, &state)
            }
            if state.vacant > 0 {
                state.vacant -= 1
            } else if let member = state.away.popFirst() {
                state.members.remove(member)  // it leaves once done
            }
        }
        return nil
    }

    /// A new worker, one of the pool from the start. Called under the state's lock,
    /// which the new thread waits for before it serves.
    private func startWorker(_ state: inout State) throws(PosixThread.StartError) {
        let thread = try startThread(name) { [self] in work() }
        state.members.insert(thread)
        state.startFailing = false
    }

    /// The line to log for a failed start: only the first of a spell.
    private func noteFailure(_ error: PosixThread.StartError, _ state: inout State) -> String? {
        defer { state.startFailing = true }
        return state.startFailing ? nil
            : "control socket: \(error); its workers keep their places, and a new thread is tried every second"
    }

    private func work() {
        let me = pthread_self()
        guard let serve = state.withLock({ $0.serve }) else { return }
        while isMember(me) {
            var key: UInt64 = 0
            guard dpfs_epoll_next(epoll, -1, &key) == 1 else { continue }
            if key == Self.timerKey {
                timerFired()
            } else if let connection = claim(Int(key)) {
                var disposition = serve(connection, nil)
                while disposition == .keep, let arrival = nextRequest(on: connection) {
                    disposition = serve(connection, arrival)
                }
                finish(connection, disposition)
            }
        }
    }

    /// Whether this thread, between two connections, is still one of the pool: back from
    /// being away, it may have been replaced meanwhile.
    private func isMember(_ me: pthread_t) -> Bool {
        state.withLock { state in
            state.away.remove(me)
            return state.members.contains(me)
        }
    }

    /// While `connection` is the daemon's only caller (SocketPolling), what of its next
    /// request came within SocketPolling's window (FrameArrival), if anything: the
    /// worker polls its socket rather than arming it and sleeping, which would cost a
    /// wake-up of an idle CPU per call. Polling the epoll set instead would not do: the
    /// kernel wakes a sleeping worker for the request all the same, and the poller keeps
    /// it from a CPU. The poll peeks as serving does, so a request that came is not
    /// peeked at twice.
    private func nextRequest(on connection: ControlConnection) -> FrameArrival? {
        guard SocketPolling.onlyCaller(connection.id) else { return nil }
        var arrival = FrameArrival.nothing
        let came = SocketPolling.poll(upTo: SocketPolling.window, while: { SocketPolling.onlyCaller(connection.id) }) {
            arrival = FrameArrival.peek(connection.fd, into: connection.peekBuffer)
            return arrival != .nothing
        }
        return came ? arrival : nil
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
                connection.close()
            }
        }
    }

    /// The timer: closes every connection idle for `idleLimit`, offers the places owed
    /// to new threads, and sets the timer for whichever of the two comes next, if any.
    private func timerFired() {
        var expirations: UInt64 = 0
        _ = read(timer, &expirations, MemoryLayout<UInt64>.size)
        let now = ContinuousClock.now
        let failure = state.withLock { state -> String? in
            state.timerDue = nil
            var next: Duration?
            for (id, entry) in state.entries {
                // One being served is at least a whole limit away from closing.
                let idle = entry.idleSince.map { now - $0 } ?? .zero
                if idle >= Self.idleLimit {
                    state.entries[id] = nil
                    dpfs_epoll_remove(epoll, entry.connection.fd)
                    entry.connection.close()
                } else {
                    next = min(next ?? Self.idleLimit, Self.idleLimit - idle)
                }
            }
            if let next { setTimer(&state, after: next) }
            return fillPlaces(&state)
        }
        failure.map(log)
        dpfs_epoll_arm(epoll, EPOLL_CTL_MOD, timer, Self.timerKey)
    }

    /// Sets the timer to fire `delay` from now, unless it is set to fire sooner.
    private func setTimer(_ state: inout State, after delay: Duration) {
        let due = ContinuousClock.now + delay
        if let current = state.timerDue, current <= due { return }
        let (seconds, attoseconds) = max(delay, .milliseconds(1)).components  // zero would disarm it
        if dpfs_timer_set(timer, seconds, Int(attoseconds / 1_000_000_000)) == 0 { state.timerDue = due }
    }
}
