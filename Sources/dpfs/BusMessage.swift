// Reading what logind sends over sd-bus: basic values, its (id, path) pairs, and the
// PropertiesChanged signal ("sa{sv}as") with which it says a session or user changed.
import CSystemd
import Glibc

/// What a PropertiesChanged signal says of one property.
enum PropertyChange<Value> {
    case unchanged
    case changed(Value)
    /// Changed, the new value not sent: it has to be read.
    case invalidated
}

enum BusMessage {
    private static func code(_ type: Unicode.Scalar) -> CChar { CChar(UInt8(ascii: type)) }

    /// A string, or an object path with `type` "o".
    static func string(_ message: OpaquePointer?, type: Unicode.Scalar = "s") -> String? {
        var value: UnsafePointer<CChar>?
        guard sd_bus_message_read_basic(message, code(type), &value) > 0, let value else { return nil }
        return String(cString: value)
    }

    static func bool(_ message: OpaquePointer?) -> Bool? {
        var value: Int32 = 0
        guard sd_bus_message_read_basic(message, code("b"), &value) > 0 else { return nil }
        return value != 0
    }

    /// A "(so)": a session's ID and object path, as logind names one.
    static func idAndPath(_ message: OpaquePointer?) -> (id: String, path: String)? {
        guard sd_bus_message_enter_container(message, code("r"), "so") > 0 else { return nil }
        guard let id = string(message), let path = string(message, type: "o"),
              sd_bus_message_exit_container(message) >= 0 else { return nil }
        return (id, path)
    }

    /// An "a(so)": every session's ID and object path.
    static func idsAndPaths(_ message: OpaquePointer?) -> [(id: String, path: String)]? {
        guard sd_bus_message_enter_container(message, code("a"), "(so)") > 0 else { return nil }
        var pairs: [(id: String, path: String)] = []
        while sd_bus_message_at_end(message, 0) == 0 {
            guard let pair = idAndPath(message) else { return nil }
            pairs.append(pair)
        }
        return sd_bus_message_exit_container(message) >= 0 ? pairs : nil
    }

    /// What a PropertiesChanged signal says of property `name` of `interface`, whose
    /// value `read` takes from inside its variant of D-Bus type `type`.
    static func propertyChange<Value>(in message: OpaquePointer?, interface: String, name: String, type: String,
                                      read: (OpaquePointer?) -> Value?) -> PropertyChange<Value> {
        guard string(message) == interface,
              sd_bus_message_enter_container(message, code("a"), "{sv}") > 0 else { return .unchanged }
        var change = PropertyChange<Value>.unchanged
        while sd_bus_message_enter_container(message, code("e"), "sv") > 0 {
            guard let key = string(message) else { return .unchanged }
            if key == name, sd_bus_message_enter_container(message, code("v"), type) > 0 {
                guard let value = read(message) else { return .unchanged }
                change = .changed(value)
                _ = sd_bus_message_exit_container(message)
            } else if sd_bus_message_skip(message, "v") < 0 {
                return .unchanged
            }
            _ = sd_bus_message_exit_container(message)
        }
        guard sd_bus_message_exit_container(message) >= 0 else { return change }
        if case .unchanged = change, sd_bus_message_enter_container(message, code("a"), "s") > 0 {
            while let invalidated = string(message) {
                if invalidated == name { change = .invalidated }
            }
        }
        return change
    }
}

extension BusMessage {
    /// Appends a string argument; false when the message could not take it.
    /// A unix fd the message carries, duplicated (the message closes its own), or nil.
    static func fileDescriptor(_ message: OpaquePointer?) -> Int32? {
        var value: Int32 = -1
        guard sd_bus_message_read_basic(message, code("h"), &value) > 0, value >= 0 else { return nil }
        let copy = fcntl(value, F_DUPFD_CLOEXEC, 3)
        return copy >= 0 ? copy : nil
    }

    static func append(_ message: OpaquePointer?, string: String) -> Bool {
        string.withCString { sd_bus_message_append_basic(message, code("s"), $0) } >= 0
    }

    static func append(_ message: OpaquePointer?, uint32 value: UInt32) -> Bool {
        var value = value
        return sd_bus_message_append_basic(message, code("u"), &value) >= 0
    }
}
