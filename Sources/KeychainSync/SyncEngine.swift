// The daemon's keychain sync (docs/design.md "Keychain sync"): one thread that keeps a
// connection to the account's PostgreSQL server, LISTENs on the account's channel,
// pulls what other devices changed since the last sequence it saw, and pushes this
// device's changes to synchronizable items. Local changes are noticed by comparing
// the item store with the state's entries (a scan) in the first round after the item
// store's generation moved (an app's write also wakes the engine), so a change made
// while the server is down waits as a pending entry and goes at the next connection;
// a round in which nothing moved reads no item and no file (KeptSyncState). The
// keychain never waits for the server: a down server only shows in `status` as
// "server unreachable" while the engine retries with backoff. A thread that cannot
// start (RLIMIT_NPROC) is the caller's error and `status` says "not running"; each
// sync command tries again. (Foundation's Thread said nothing: status said
// "connecting" for ever while no change went anywhere.)
import DPFSProtocol
import DataProtection
import Foundation
import Glibc
import ItemStore
import Logging
import Synchronization

public final class SyncEngine: Sendable {
    let directory: DeviceDirectory
    let device: LockStateManager
    let items: ItemStore
    /// The engine's and the commands' shared state; `work` serialises a round of the
    /// engine against a command, so that a leave never races a push.
    let shared = Mutex<Shared>(Shared())
    let work = Mutex<Void>(())
    /// sync.json, read once and written when it changes.
    let stateFile: KeptSyncState
    /// What the last scan compared: while it still holds, a round scans nothing.
    private let lastScan = Mutex<ScanMark?>(nil)
    /// Rounds that compared every item with the state (for tests).
    let scans = Atomic<Int>(0)
    /// Sync's own commits to the item store: a round whose only writes are its own
    /// leaves nothing for the next round to scan.
    let ownWrites = Atomic<Int>(0)
    private let wakePipe: (read: Int32, write: Int32)
    private let observerID = Mutex<UInt64?>(nil)
    let logger = Logger(label: "dpfs.sync")

    struct Shared: Sendable {
        var connection: String?
        var lastError: String?
        var stopping = false
        var members: Int?
        /// The engine's thread started.
        var running = false
    }

    /// PosixThread.start; another for tests, to fail at will.
    private let startThread: PosixThread.Start

    public convenience init(directory: DeviceDirectory, device: LockStateManager, items: ItemStore) throws {
        try self.init(directory: directory, device: device, items: items) { (name, body) throws(PosixThread.StartError) in
            try PosixThread.start(named: name, body)
        }
    }

    init(directory: DeviceDirectory, device: LockStateManager, items: ItemStore, startThread: @escaping PosixThread.Start) throws {
        self.directory = directory
        self.device = device
        self.items = items
        self.startThread = startThread
        stateFile = KeptSyncState(directory: directory)
        var fds: [Int32] = [0, 0]
        guard pipe(&fds) == 0 else { throw SystemError("pipe", "sync wake-up") }
        for fd in fds {
            _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
            _ = fcntl(fd, F_SETFL, O_NONBLOCK)
        }
        wakePipe = (fds[0], fds[1])
        // A state file that cannot be read is refused now, at mount, with one line.
        _ = try stateFile.current()
    }

    /// Refuses, with one line, a state file that cannot be read: the daemon asks before
    /// it opens the keychain, whose open changes the file (`init` asks again).
    public static func checkState(in directory: DeviceDirectory) throws {
        _ = try SyncState.load(from: directory)
    }

    /// Starts the engine's thread; it idles while the device is in no account. Throws
    /// when the thread cannot start: the engine then does nothing until a sync command
    /// starts it, and `status` says "not running".
    public func start() throws {
        items.changeObservers.add { [weak self] in self?.wake() }
        let id = device.observe { [weak self] event in
            switch event.event {
            case .didBecomeAvailable: self?.wake()
            default: break
            }
        }
        observerID.withLock { $0 = id }
        try startRunning()
    }

    /// Starts the engine's thread unless it runs; on failure `status` says why.
    func startRunning() throws(PosixThread.StartError) {
        try shared.withLock { (shared) throws(PosixThread.StartError) in
            guard !shared.running, !shared.stopping else { return }
            do throws(PosixThread.StartError) {
                _ = try startThread("dpfs-sync") { [self] in run() }
            } catch {
                shared.connection = "not running (\(error))"
                shared.lastError = "\(error)"
                throw error
            }
            shared.running = true
            shared.connection = nil
            shared.lastError = nil
        }
    }

    public func stop() {
        shared.withLock { $0.stopping = true }
        if let id = observerID.withLock({ $0 }) { device.stopObserving(id) }
        wake()
    }

    /// Asks the engine for a round now (a local change, an unlock, a command).
    func wake() {
        var byte: UInt8 = 1
        _ = Glibc.write(wakePipe.write, &byte, 1)
    }

    /// One line for `dpfs status`; nil when the device is in no account.
    public var statusLine: String? {
        guard case .some(.some) = try? stateFile.current() else { return nil }
        return shared.withLock { $0.connection } ?? "connecting"
    }

    // MARK: the thread

    private func run() {
        var connection: PostgresConnection?
        var backoff = 0.25
        var again = 0
        while !shared.withLock({ $0.stopping }) {
            var wait = 5.0
            do {
                let round = try work.withLock { _ in try self.round(&connection) }
                again = round == .again ? again + 1 : 0
                switch round {
                // In no account, or before the first unlock: only a command or an unlock
                // (each wakes the engine) can change that, so no timer wakes the idle
                // daemon (each round touches code and heap that then stay resident).
                case .idle: connection = nil; wait = .infinity
                case .done: backoff = 0.25
                // Another round at once, unless pushes keep meeting newer versions (many
                // devices writing the same records): then a short pause lets them finish.
                case .again: wait = again > 10 ? 0.2 : 0
                }
            } catch let error as SyncError where error.stopsSync {
                // Only a command (leave) or an unlock wakes it: retrying changes nothing.
                connection = nil
                record(connection: "stopped", error: error.description)
                wait = .infinity
            } catch let error as SyncError where error.isUnreachable {
                connection = nil
                record(connection: error.isRefusal ? "server refused the connection" : "server unreachable",
                       error: error.description)
                wait = backoff
                backoff = min(backoff * 2, 5)
            } catch {
                record(connection: nil, error: "\(error)")
                wait = 1
            }
            if wait > 0 { sleep(until: wait, connection: connection) }
            if let connection { _ = try? connection.takeNotifications() }
        }
    }

    enum Round { case idle, done, again }

    /// Waits for the server's notification, a wake-up, or `seconds` (infinity: no timeout).
    private func sleep(until seconds: Double, connection: PostgresConnection?) {
        var fds = [pollfd(fd: wakePipe.read, events: Int16(POLLIN), revents: 0)]
        if let socket = connection?.socket, socket >= 0 { fds.append(pollfd(fd: socket, events: Int16(POLLIN), revents: 0)) }
        _ = poll(&fds, nfds_t(fds.count), seconds.isFinite ? Int32(seconds * 1000) : -1)
        var drain = [UInt8](repeating: 0, count: 256)
        while Glibc.read(wakePipe.read, &drain, drain.count) > 0 {}
    }

    /// Keeps the engine's last word for `status`; logs each change of connection and
    /// each new failure once, not at every retry.
    func record(connection: String?, error: String?) {
        let (changed, newError) = shared.withLock { shared -> (String?, String?) in
            let changed = connection != nil && connection != shared.connection ? connection : nil
            let newError = error != nil && error != shared.lastError ? error : nil
            if let connection { shared.connection = connection }
            shared.lastError = error
            return (changed, newError)
        }
        if let changed { logger.notice("keychain sync: \(changed)") }
        if let newError { logger.warning("keychain sync: \(newError)") }
    }

    /// One round: notice local changes, then (connected) rotate if due, pull, push.
    func round(_ connection: inout PostgresConnection?) throws -> Round {
        try round { exchange, state in
            let connected = connection == nil || connection?.isBroken == true
            if connected {
                guard let server = try state.connectionString(device: device) else { return nil }
                let made = try PostgresConnection(server: server)
                try made.execute("LISTEN " + ServerSchema.channel(state.accountID))
                connection = made
            }
            guard let connection else { return nil }
            return try exchange.synchronize(&state, connection, connected: connected)
        }
    }

    /// A round whose server part is `exchange` (nil: no server to talk to, the round is idle).
    func round(exchange synchronize: (inout Exchange, inout SyncState) throws -> Bool?) throws -> Round {
        guard var state = try stateFile.current() else { return .idle }
        guard let crypto = try state.crypto(device: device) else {
            record(connection: "waiting for the first unlock", error: nil)
            return .idle
        }
        var exchange = Exchange(engine: self, crypto: crypto)
        // Saved only when changed: most rounds (a notification of one's own push) change nothing.
        var saved = state
        try state.sealServerIfClear(device: device)
        // Read before the scan: a write during it moves the generation, and the next
        // round scans again.
        let writesBefore = ownWrites.load(ordering: .relaxed)
        let mark = ScanMark(state, generation: try items.currentGeneration())
        if lastScan.withLock({ $0 }) != mark {
            try exchange.scan(&state)
            scans.add(1, ordering: .relaxed)
        }
        if state != saved {
            try stateFile.save(state)
            saved = state
        }
        // Each received version the keychain noted is in the saved state now, or was
        // overtaken by a change made here, which the scan took as this device's.
        if exchange.foundReceived { try forgetReceived() }
        lastScan.withLock { $0 = mark }
        guard let more = try synchronize(&exchange, &state) else { return .idle }
        if state != saved {
            try stateFile.save(state)
            // What the pull wrote is in the saved state now.
            try forgetReceived()
        }
        try keepMark(mark, writesBefore: writesBefore)
        if exchange.removed {
            record(connection: "removed from the account", error: nil)
        } else {
            recordConnected(state)
        }
        return more ? .again : .done
    }

    /// Forgets the received versions the keychain noted, counting the write if any.
    private func forgetReceived() throws {
        if try items.forgetReceivedSyncVersions() { ownWrites.add(1, ordering: .relaxed) }
    }

    /// The item store's generation moved by sync's own writes alone since `mark` (each
    /// moves it by one): those wrote what the state now records, so the next round
    /// need not scan. Any other write (an app's, during the pull) leaves the mark
    /// behind, and the next round scans.
    private func keepMark(_ mark: ScanMark, writesBefore: Int) throws {
        let own = ownWrites.load(ordering: .relaxed) - writesBefore
        guard own > 0 else { return }
        let now = try items.currentGeneration()
        guard now == mark.generation + own else { return }
        lastScan.withLock { if $0 == mark { $0 = mark.moved(to: now) } }
    }
}

extension SyncEngine {
    /// "connected", with the records that do not open and those refused for their size.
    func recordConnected(_ state: SyncState) {
        var problems: [String] = [], errors: [String] = []
        if let unreadable = state.unreadable?.count {
            problems.append("\(unreadable) records do not open")
            errors.append(SyncError.recordsDoNotOpen(unreadable).description)
        }
        if let refused = state.refused {
            problems.append("\(refused.count) records refused as too large")
            errors.append(SyncError.recordsRefused(refused).description)
        }
        record(connection: (["connected"] + problems).joined(separator: ", "),
               error: errors.isEmpty ? nil : errors.joined(separator: "; "))
    }
}

/// The state a scan compared with the items, and the item store's generation then,
/// or after sync's own writes since.
struct ScanMark: Equatable, Sendable {
    let accountID: String
    let deviceID: String
    let epoch: Int
    let generation: Int

    init(_ state: SyncState, generation: Int) {
        accountID = state.accountID; deviceID = state.deviceID; epoch = state.epoch; self.generation = generation
    }

    private init(_ mark: ScanMark, generation: Int) {
        accountID = mark.accountID; deviceID = mark.deviceID; epoch = mark.epoch; self.generation = generation
    }

    func moved(to generation: Int) -> ScanMark { ScanMark(self, generation: generation) }
}
