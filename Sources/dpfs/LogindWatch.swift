// The lock that follows the session (dpfs mount --lock-on): logind's signals on the
// system bus, through sd-bus, lock the device as the phone locks with its screen.
// A screen lock starts the grace period, as a phone's does; a suspend or the end of
// the session locks at once, since nothing will be left to run the grace timer. A
// screen lock is either the session's Lock signal (loginctl lock-session asks logind
// for it) or its LockedHint turning true: GNOME, KDE and most lockers lock the screen
// themselves and only tell logind so. The screen's unlock unlocks nothing: the device
// stays locked until its passcode, as a phone does.
// The session followed is XDG_SESSION_ID's, as the caller of `dpfs mount` had it.
import CSystemd
import DataProtection
import DPFSProtocol
import Foundation
import Glibc
import Logging
import Synchronization

enum LockTrigger: String, CaseIterable, Sendable {
    case screenLock = "screen-lock"
    case suspend
    case logout

    struct UnknownWord: Error { let word: String }

    /// "screen-lock,suspend,logout" → the triggers, or the word it does not know.
    static func parse(_ list: String) -> Result<Set<LockTrigger>, UnknownWord> {
        var triggers = Set<LockTrigger>()
        for word in list.split(separator: ",", omittingEmptySubsequences: false) {
            guard let trigger = LockTrigger(rawValue: String(word)) else { return .failure(UnknownWord(word: String(word))) }
            triggers.insert(trigger)
        }
        return .success(triggers)
    }
}

final class LogindWatch: @unchecked Sendable {
    private let device: LockStateManager
    private let triggers: Set<LockTrigger>
    private let sessionID: String
    private var sessionPath = ""
    private let logger: Logger
    // Owned by the watch's thread once started.
    private var bus: OpaquePointer?
    private var slots: [OpaquePointer?] = []
    private let stopped = Atomic<Bool>(false)

    private static let service = "org.freedesktop.login1"
    private static let managerPath = "/org/freedesktop/login1"
    private static let managerInterface = "org.freedesktop.login1.Manager"
    private static let sessionInterface = "org.freedesktop.login1.Session"

    /// Connects to the system bus (DBUS_SYSTEM_BUS_ADDRESS, if set) and subscribes;
    /// throws one line when logind or the session cannot be reached.
    init(device: LockStateManager, triggers: Set<LockTrigger>, sessionID: String?, logger: Logger) throws {
        self.device = device
        self.triggers = triggers
        self.logger = logger
        guard let sessionID, !sessionID.isEmpty else {
            throw CLIError("--lock-on needs the login session to follow: XDG_SESSION_ID is not set")
        }
        self.sessionID = sessionID
        var opened: OpaquePointer?
        let rc = sd_bus_open_system(&opened)
        guard rc >= 0, let opened else {
            let address = ProcessInfo.processInfo.environment["DBUS_SYSTEM_BUS_ADDRESS"] ?? "unix:path=/run/dbus/system_bus_socket"
            throw CLIError("--lock-on: cannot reach the system bus at \(address): \(String(cString: strerror(-rc)))")
        }
        bus = opened
        do {
            sessionPath = try sessionObjectPath()
            if triggers.contains(.screenLock) {
                try subscribe(path: sessionPath, interface: Self.sessionInterface, member: "Lock", handler: Self.onLock)
                try subscribe(path: sessionPath, interface: "org.freedesktop.DBus.Properties", member: "PropertiesChanged",
                              handler: Self.onSessionChanged)
            }
            if triggers.contains(.suspend) {
                try subscribe(path: Self.managerPath, interface: Self.managerInterface, member: "PrepareForSleep", handler: Self.onSleep)
            }
            if triggers.contains(.logout) {
                try subscribe(path: Self.managerPath, interface: Self.managerInterface, member: "SessionRemoved", handler: Self.onSessionRemoved)
            }
        } catch {
            close()
            throw error
        }
    }

    deinit { close() }

    /// Serves the bus on a thread of its own until `stop`; says so in the log when no
    /// thread can start.
    func start() {
        let started = PosixThread.start(named: "dpfs-logind") { [self] in
            while !stopped.load(ordering: .acquiring) {
                let processed = sd_bus_process(bus, nil)
                if processed < 0 {
                    logger.error("--lock-on: the system bus connection failed: \(String(cString: strerror(-processed))); the lock no longer follows the session")
                    return
                }
                if processed == 0 { _ = sd_bus_wait(bus, 500_000) }
            }
        }
        if case .failure(let error) = started {
            logger.error("--lock-on: \(error); the lock does not follow the session")
        }
    }

    func stop() { stopped.store(true, ordering: .releasing) }

    private func close() {
        for slot in slots { sd_bus_slot_unref(slot) }
        slots = []
        if let bus { sd_bus_flush_close_unref(bus) }
        bus = nil
    }

    /// The object path of the followed session: logind's GetSession(ID), checked by
    /// reading the session's Id, which only a session that exists has (a signal
    /// subscribed on a path with no session behind it would never come).
    private func sessionObjectPath() throws -> String {
        let sessionPath = try call(Self.managerPath, Self.managerInterface, "GetSession", [sessionID]) { reply in
            var path: UnsafePointer<CChar>?
            guard sd_bus_message_read_basic(reply, CChar(UInt8(ascii: "o")), &path) > 0, let path else { return nil }
            return String(cString: path)
        }
        _ = try call(sessionPath, "org.freedesktop.DBus.Properties", "Get", [Self.sessionInterface, "Id"]) { _ in "" }
        return sessionPath
    }

    /// Calls logind's `member` with string arguments; `read` takes what it needs from the
    /// reply (nil: the reply is not what logind sends).
    private func call(_ path: String, _ interface: String, _ member: String, _ arguments: [String],
                      read: (OpaquePointer?) -> String?) throws -> String {
        var call: OpaquePointer?
        var reply: OpaquePointer?
        var error = sd_bus_error()
        defer {
            sd_bus_message_unref(call)
            sd_bus_message_unref(reply)
            sd_bus_error_free(&error)
        }
        var sent = sd_bus_message_new_method_call(bus, &call, Self.service, path, interface, member) >= 0
        for argument in arguments where sent {
            sent = argument.withCString { sd_bus_message_append_basic(call, CChar(UInt8(ascii: "s")), $0) } >= 0
        }
        guard sent, sd_bus_call(bus, call, 5_000_000, &error, &reply) >= 0 else {
            let why = error.message.map { String(cString: $0) } ?? "no answer"
            throw CLIError("--lock-on: logind does not know session \(sessionID): \(why)")
        }
        guard let value = read(reply) else {
            throw CLIError("--lock-on: logind's answer to \(member) for session \(sessionID) is not one it sends")
        }
        return value
    }

    /// The session's LockedHint as logind has it now; nil when it cannot be read.
    private func lockedHint() -> Bool? {
        var reply: OpaquePointer?
        var error = sd_bus_error()
        defer {
            sd_bus_message_unref(reply)
            sd_bus_error_free(&error)
        }
        guard sd_bus_get_property(bus, Self.service, sessionPath, Self.sessionInterface, "LockedHint", &error, &reply, "b") >= 0
        else { return nil }
        return BusMessage.bool(reply)
    }

    private func subscribe(path: String, interface: String, member: String, handler: sd_bus_message_handler_t) throws {
        var slot: OpaquePointer?
        let context = Unmanaged.passUnretained(self).toOpaque()
        let rc = sd_bus_match_signal(bus, &slot, Self.service, path, interface, member, handler, context)
        guard rc >= 0 else {
            throw CLIError("--lock-on: cannot subscribe to logind's \(member): \(String(cString: strerror(-rc)))")
        }
        slots.append(slot)
    }

    private func lock(now: Bool, because reason: String) {
        logger.notice("\(reason): locking\(now ? " now" : "")")
        _ = device.lock(now: now)
    }

    private static func watch(_ context: UnsafeMutableRawPointer?) -> LogindWatch? {
        context.map { Unmanaged<LogindWatch>.fromOpaque($0).takeUnretainedValue() }
    }

    private static let onLock: sd_bus_message_handler_t = { _, context, _ in
        watch(context)?.lock(now: false, because: "the session's screen locked")
        return 0
    }

    /// The screen locker's word: SetLockedHint(true) on the session.
    private static let onSessionChanged: sd_bus_message_handler_t = { message, context, _ in
        guard let watch = watch(context) else { return 0 }
        let locked: Bool
        switch BusMessage.propertyChange(in: message, interface: sessionInterface, name: "LockedHint", type: "b",
                                         read: BusMessage.bool) {
        case .unchanged: return 0
        case .changed(let hint): locked = hint
        // Unread, it counts as locked: the lock fails closed.
        case .invalidated: locked = watch.lockedHint() ?? true
        }
        if locked {
            watch.lock(now: false, because: "the session's screen locked (its LockedHint)")
        } else {
            watch.logger.info("the session's screen unlocked: the device stays locked until its passcode")
        }
        return 0
    }

    private static let onSleep: sd_bus_message_handler_t = { message, context, _ in
        var starting: Int32 = 0
        // PrepareForSleep(true) comes before the suspend, (false) after the resume.
        if sd_bus_message_read_basic(message, CChar(UInt8(ascii: "b")), &starting) > 0, starting != 0 {
            watch(context)?.lock(now: true, because: "the machine is going to sleep")
        }
        return 0
    }

    private static let onSessionRemoved: sd_bus_message_handler_t = { message, context, _ in
        var id: UnsafePointer<CChar>?
        guard let watch = watch(context),
              sd_bus_message_read_basic(message, CChar(UInt8(ascii: "s")), &id) > 0, let id,
              String(cString: id) == watch.sessionID else { return 0 }
        watch.lock(now: true, because: "the session ended")
        return 0
    }
}
