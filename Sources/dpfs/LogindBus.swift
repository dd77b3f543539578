// One connection to logind on the system bus, through sd-bus: its methods, its
// properties and its signals, each failure one line. Used by one thread at a time.
import CSystemd
import Foundation
import Glibc

/// Why logind could not be asked or heard, in one line.
struct LogindError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

final class LogindBus {
    static let service = "org.freedesktop.login1"
    static let managerPath = "/org/freedesktop/login1"
    static let managerInterface = "org.freedesktop.login1.Manager"
    static let sessionInterface = "org.freedesktop.login1.Session"
    static let userInterface = "org.freedesktop.login1.User"
    static let propertiesInterface = "org.freedesktop.DBus.Properties"

    /// Subscriptions that end together: a followed session's end when another is followed.
    enum Group { case logind, session }

    private let bus: OpaquePointer
    private var slots: [Group: [OpaquePointer]] = [:]

    /// The system bus: DBUS_SYSTEM_BUS_ADDRESS, if set, else the standard one.
    init() throws {
        var opened: OpaquePointer?
        let rc = sd_bus_open_system(&opened)
        guard rc >= 0, let opened else {
            let address = ProcessInfo.processInfo.environment["DBUS_SYSTEM_BUS_ADDRESS"] ?? "unix:path=/run/dbus/system_bus_socket"
            throw LogindError("cannot reach the system bus at \(address): \(String(cString: strerror(-rc)))")
        }
        bus = opened
    }

    deinit {
        // A slot holds the bus: the slots go first.
        for group in slots.values { for slot in group { sd_bus_slot_unref(slot) } }
        sd_bus_flush_close_unref(bus)
    }

    /// Calls logind's `member` on `path`; `append` adds the arguments, `read` takes what
    /// it needs from the reply (nil: not an answer logind gives).
    func call<Value>(_ path: String, _ interface: String, _ member: String,
                     append: (OpaquePointer?) -> Bool = { _ in true },
                     read: (OpaquePointer?) -> Value?) throws -> Value {
        var call: OpaquePointer?
        var reply: OpaquePointer?
        var error = sd_bus_error()
        defer {
            sd_bus_message_unref(call)
            sd_bus_message_unref(reply)
            sd_bus_error_free(&error)
        }
        guard sd_bus_message_new_method_call(bus, &call, Self.service, path, interface, member) >= 0, append(call) else {
            throw LogindError("cannot ask logind for \(member): out of memory")
        }
        let rc = sd_bus_call(bus, call, 5_000_000, &error, &reply)
        guard rc >= 0 else { throw LogindError(Self.why(error, rc)) }
        guard let value = read(reply) else { throw LogindError("logind's answer to \(member) is not one it sends") }
        return value
    }

    /// Property `name` of logind's object `path`, of D-Bus type `type`, as `read` takes it.
    func property<Value>(_ path: String, _ interface: String, _ name: String, type: String,
                         read: (OpaquePointer?) -> Value?) throws -> Value {
        var reply: OpaquePointer?
        var error = sd_bus_error()
        defer {
            sd_bus_message_unref(reply)
            sd_bus_error_free(&error)
        }
        let rc = sd_bus_get_property(bus, Self.service, path, interface, name, &error, &reply, type)
        guard rc >= 0 else { throw LogindError(Self.why(error, rc)) }
        guard let value = read(reply) else { throw LogindError("logind's \(name) of \(path) is not a value it sends") }
        return value
    }

    /// Has `handler` called, with `context`, for logind's signal `member` (from any of
    /// its objects when `path` is nil), until the group is dropped or the bus closes.
    func subscribe(_ group: Group, path: String?, interface: String, member: String,
                   handler: sd_bus_message_handler_t, context: UnsafeMutableRawPointer) throws {
        var slot: OpaquePointer?
        let rc = sd_bus_match_signal(bus, &slot, Self.service, path, interface, member, handler, context)
        guard rc >= 0, let slot else {
            throw LogindError("cannot subscribe to logind's \(member): \(String(cString: strerror(-rc)))")
        }
        slots[group, default: []].append(slot)
    }

    /// Has `handler` called for the messages a match `rule` of the bus's selects.
    func subscribe(_ group: Group, rule: String, handler: sd_bus_message_handler_t,
                   context: UnsafeMutableRawPointer) throws {
        var slot: OpaquePointer?
        let rc = sd_bus_add_match(bus, &slot, rule, handler, context)
        guard rc >= 0, let slot else {
            throw LogindError("cannot add the match \(rule): \(String(cString: strerror(-rc)))")
        }
        slots[group, default: []].append(slot)
    }

    func unsubscribe(_ group: Group) {
        for slot in slots[group] ?? [] { sd_bus_slot_unref(slot) }
        slots[group] = nil
    }

    /// Handles one message that came, if any: > 0 one was, 0 none was waiting, < 0 the
    /// connection is lost (-errno).
    func process() -> Int32 { sd_bus_process(bus, nil) }

    /// Waits up to `microseconds` for a message.
    func wait(microseconds: UInt64) -> Int32 { sd_bus_wait(bus, microseconds) }

    private static func why(_ error: sd_bus_error, _ rc: Int32) -> String {
        error.message.map { String(cString: $0) } ?? String(cString: strerror(-rc))
    }
}
