// The lock that follows the session (dpfs mount --lock-on): logind's signals on the
// system bus, through sd-bus, lock the device as the phone locks with its screen.
// A screen lock starts the grace period, as a phone's does; a suspend or the end of
// the session locks at once, since nothing will be left to run the grace timer. A
// screen lock is either the session's Lock signal (loginctl lock-session asks logind
// for it) or its LockedHint turning true: GNOME, KDE and most lockers lock the screen
// themselves and only tell logind so. The screen's unlock unlocks nothing: the device
// stays locked until its passcode, as a phone does.
// Where the lock cannot follow (the bus or logind gone), it fails closed: the device
// locks, at once where suspend or logout is a trigger (neither could be seen now,
// and both lock at once), else with the grace period; the watch reconnects, a second
// apart at first and then up to four, and follows again once logind is back.
// Which session is followed: SessionChoice. The signals' handlers: LogindWatch+Signals.
import DataProtection
import DPFSProtocol
import Foundation
import Glibc
import Logging
import Synchronization

final class LogindWatch: @unchecked Sendable {
    let device: LockStateManager
    let triggers: Set<LockTrigger>
    let source: SessionSource
    let logger: Logger
    // Owned by the watch's thread once started.
    private(set) var bus: LogindBus?
    /// The session followed now, if any.
    var followed: FollowedSession?
    /// Set by a handler when the session followed may have to change: chosen again once
    /// the handler returns, not inside it, whose own subscription may be among those replaced.
    var mustChooseAgain = false
    /// Set by a handler when the followed session ended.
    var followedEnded = false
    /// Set by a handler when logind left the bus: the watch reconnects.
    var lostLogind = false
    /// Why the lock stopped following, while the watch reconnects.
    private var lostBecause: String?
    /// The delay lock on sleep held while suspend is a trigger (LogindWatch+SleepDelay).
    var sleepDelay: Int32 = -1
    private let stopped = Atomic<Bool>(false)
    /// What status says of the watch; written by its thread, read by the control's.
    private let state: Mutex<LockFollowing>

    /// Whether a trigger needs a session to follow: suspend alone needs none.
    var followsSession: Bool { triggers.contains(.screenLock) || triggers.contains(.logout) }

    /// Connects to the system bus (DBUS_SYSTEM_BUS_ADDRESS, if set), finds the session to
    /// follow and subscribes; throws one line when logind or a session cannot be found.
    init(device: LockStateManager, triggers: Set<LockTrigger>, source: SessionSource, logger: Logger) throws {
        self.device = device
        self.triggers = triggers
        self.source = source
        self.logger = logger
        let events = LockTrigger.allCases.filter(triggers.contains).map(\.rawValue)
        state = Mutex(LockFollowing(triggers: events, following: false, session: nil, problem: "not connected yet"))
        do { try connect() } catch { throw CLIError("--lock-on: \(error)") }
    }

    /// The watch as `dpfs status` shows it.
    var status: LockFollowing { state.withLock { $0 } }

    /// Connects to the system bus, subscribes and finds the session to follow; throws one
    /// line, with the bus left closed, when logind or a session cannot be found.
    private func connect() throws {
        let bus = try LogindBus()
        self.bus = bus
        do {
            try subscribe(on: bus)
            holdSleepDelay()
            if followsSession {
                try follow(try bus.session(of: source), on: bus)
            } else {
                state.withLock { $0.following = true; $0.session = nil; $0.problem = nil }
            }
        } catch {
            releaseSleepDelay()
            self.bus = nil
            followed = nil
            throw error
        }
    }

    /// Serves the bus on a thread of its own until `stop`; says so in the log when no
    /// thread can start.
    func start() {
        do throws(PosixThread.StartError) {
            try PosixThread.start(named: "dpfs-logind") { [self] in serve() }
        } catch {
            logger.error("--lock-on: \(error); the lock does not follow the session")
        }
    }

    func stop() { stopped.store(true, ordering: .releasing) }

    private func serve() {
        var pause = Self.firstPause
        while !stopped.load(ordering: .acquiring) {
            guard let bus else {
                usleep(UInt32(pause * 1_000_000))
                pause = reconnect() ? Self.firstPause : min(pause * 2, Self.longestPause)
                continue
            }
            let processed = bus.process()
            if processed < 0 {
                stopFollowing(because: "the system bus is gone", detail: String(cString: strerror(-processed)))
                continue
            }
            if lostLogind {
                stopFollowing(because: "logind left the system bus", detail: nil)
                continue
            }
            if mustChooseAgain {
                mustChooseAgain = false
                chooseAgain(on: bus)
            }
            if processed == 0 { _ = bus.wait(microseconds: 500_000) }
        }
    }

    private static let firstPause = 1.0
    private static let longestPause = 4.0

    /// The lock can no longer follow: the device locks, the bus closes, and the thread
    /// reconnects.
    private func stopFollowing(because reason: String, detail: String?) {
        releaseSleepDelay()
        bus = nil
        followed = nil
        lostLogind = false
        mustChooseAgain = false
        followedEnded = false
        lostBecause = reason
        state.withLock { $0.following = false; $0.session = nil; $0.problem = "\(reason); locked then, reconnecting" }
        let now = triggers.contains(.suspend) || triggers.contains(.logout)
        let why = detail.map { "\(reason) (\($0))" } ?? reason
        logger.error("--lock-on: \(why): the lock cannot follow the session; locking\(now ? " now" : "") and reconnecting")
        _ = device.lock(now: now)
    }

    /// One attempt to follow again; true when it does. Says in the log what stands in the way
    /// when that changes, not at every attempt.
    private func reconnect() -> Bool {
        do {
            try connect()
            lostBecause = nil
            logger.notice("--lock-on: logind is reached again; the lock follows \(followed.map { "session \($0.id)" } ?? "logind") again")
            return true
        } catch {
            let problem = "\(lostBecause ?? "logind is not reached"); locked then, reconnecting (\(error))"
            let changed = state.withLock { state -> Bool in
                defer { state.problem = problem }
                return state.problem != problem
            }
            if changed { logger.warning("--lock-on: \(error); trying again") }
            return false
        }
    }

    /// logind's signals that concern no session in particular, and its leaving the bus.
    private func subscribe(on bus: LogindBus) throws {
        let context = Unmanaged.passUnretained(self).toOpaque()
        let manager = (path: LogindBus.managerPath, interface: LogindBus.managerInterface)
        try bus.subscribe(.logind, rule: "type='signal',sender='org.freedesktop.DBus',path='/org/freedesktop/DBus',"
                              + "interface='org.freedesktop.DBus',member='NameOwnerChanged',arg0='\(LogindBus.service)'",
                          handler: Self.onLogindOwnerChanged, context: context)
        if triggers.contains(.suspend) {
            try bus.subscribe(.logind, path: manager.path, interface: manager.interface, member: "PrepareForSleep",
                              handler: Self.onSleep, context: context)
        }
        guard followsSession else { return }
        try bus.subscribe(.logind, path: manager.path, interface: manager.interface, member: "SessionRemoved",
                          handler: Self.onSessionRemoved, context: context)
        guard case .user(let uid) = source else { return }
        // The user's display session changes with their User's Display; a session that
        // comes may be their only one.
        try bus.subscribe(.logind, path: try bus.userPath(uid), interface: LogindBus.propertiesInterface,
                          member: "PropertiesChanged", handler: Self.onUserChanged, context: context)
        try bus.subscribe(.logind, path: manager.path, interface: manager.interface, member: "SessionNew",
                          handler: Self.onSessionNew, context: context)
    }

    /// Follows `session`: its screen lock's signals (subscribed before its LockedHint is
    /// read, so that no change falls between the two).
    private func follow(_ session: FollowedSession, on bus: LogindBus) throws {
        bus.unsubscribe(.session)
        followed = nil
        if triggers.contains(.screenLock) {
            let context = Unmanaged.passUnretained(self).toOpaque()
            try bus.subscribe(.session, path: session.path, interface: LogindBus.sessionInterface, member: "Lock",
                              handler: Self.onLock, context: context)
            try bus.subscribe(.session, path: session.path, interface: LogindBus.propertiesInterface,
                              member: "PropertiesChanged", handler: Self.onSessionChanged, context: context)
        }
        followed = session
        state.withLock { $0.following = true; $0.session = session.id; $0.problem = nil }
        logger.notice("--lock-on: the lock follows session \(session.id), \(session.chosenAs)")
        // A screen already locked locks the device; unread, it counts as locked.
        if triggers.contains(.screenLock), device.phase == .unlocked, (try? bus.lockedHint(of: session)) ?? true {
            lock(now: false, because: "the screen of session \(session.id) is locked")
        }
    }

    /// Follows the session the source names now, if it changed. The one followed until
    /// now, no longer the user's display session, is left as at its logout.
    private func chooseAgain(on bus: LogindBus) {
        if followedEnded, let ended = followed {
            followedEnded = false
            bus.unsubscribe(.session)
            followed = nil
            guard case .user = source else {
                state.withLock { $0.following = false; $0.session = nil; $0.problem = "session \(ended.id) ended; locked then" }
                logger.notice("--lock-on: session \(ended.id) ended; the lock follows no session now")
                return
            }
        }
        guard case .user = source else { return }
        let chosen: Result<FollowedSession, Error> = Result { try bus.session(of: source) }
        if let followed, case .success(let session) = chosen, session.id == followed.id { return }
        if let followed { lockForLostSession(because: "session \(followed.id) is no longer \(followed.chosenAs)") }
        bus.unsubscribe(.session)
        followed = nil
        switch chosen {
        case .success(let session):
            do { try follow(session, on: bus) } catch {
                bus.unsubscribe(.session)
                followsNone(because: error, until: "logind names another")
            }
        case .failure(let error):
            followsNone(because: error, until: "logind names one")
        }
    }

    private func followsNone(because error: Error, until what: String) {
        state.withLock { $0.following = false; $0.session = nil; $0.problem = "\(error); locked then" }
        logger.warning("--lock-on: \(error); the lock follows no session until \(what)")
    }

    /// The followed session is gone, or no longer the one to follow: its screen can no
    /// longer be watched, so the device locks as at a logout (at once where logout is a
    /// trigger, else as at a screen lock).
    func lockForLostSession(because reason: String) {
        lock(now: triggers.contains(.logout), because: reason)
    }

    func lock(now: Bool, because reason: String) {
        logger.notice("\(reason): locking\(now ? " now" : "")")
        _ = device.lock(now: now)
    }
}
