// The body of a control frame (dpfs(5)): one value in a compact, self-describing binary
// form that the typed messages are encoded to and decoded from (WireEncoder,
// WireDecoder). Every value starts with a tag byte; lengths and integers are LEB128
// varints (signed ones zigzag-mapped), doubles are 8 bytes big-endian.
public enum WireValue: Equatable, Sendable {
    case null
    case bool(Bool)
    case int(Int64)
    case unsigned(UInt64)
    case double(Double)
    case string(String)
    case bytes([UInt8])
    case list([WireValue])
    /// Entries in the order they were encoded; a reader takes a key's first entry.
    case map([(key: String, value: WireValue)])

    public static func == (lhs: WireValue, rhs: WireValue) -> Bool {
        switch (lhs, rhs) {
        case (.null, .null): return true
        case let (.bool(a), .bool(b)): return a == b
        case let (.int(a), .int(b)): return a == b
        case let (.unsigned(a), .unsigned(b)): return a == b
        case let (.double(a), .double(b)): return a.bitPattern == b.bitPattern
        case let (.string(a), .string(b)): return a == b
        case let (.bytes(a), .bytes(b)): return a == b
        case let (.list(a), .list(b)): return a == b
        case let (.map(a), .map(b)):
            return a.count == b.count && zip(a, b).allSatisfy { $0.key == $1.key && $0.value == $1.value }
        default: return false
        }
    }

    enum Tag: UInt8 {
        case null = 0, `false`, `true`, int, unsigned, double, string, bytes, list, map
    }

    /// Deeper nesting than any message has is refused, so that a hostile body cannot
    /// exhaust the reader's stack.
    static let maxDepth = 32

    /// How many values a body may hold, besides its length: each value read costs far
    /// more memory and time than its byte or two, and a body of 16 MiB could hold
    /// millions (a map of eight million empty entries took seconds and a gigabyte).
    public struct Limits: Sendable {
        /// The most entries of one list or map.
        public let entries: Int
        /// The most entries of all its lists and maps together.
        public let values: Int

        /// A request's, far beyond any real one: a keychain call or an import carries
        /// tens of attributes (ParsedAttributes knows some thirty names), every other
        /// request a few fields.
        public static let request = Limits(entries: 256, values: 4096)
        /// A reply's, from the daemon the client has checked: a find may return
        /// thousands of items, and the frame's size bounds it.
        public static let unlimited = Limits(entries: .max, values: .max)
    }
}

// MARK: - Writing

extension WireValue {
    public func serialized() -> [UInt8] {
        var out = WireWriter()
        write(to: &out)
        return out.bytes
    }

    func write(to out: inout WireWriter) {
        switch self {
        case .null: out.null()
        case .bool(let value): out.bool(value)
        case .int(let value): out.int(value)
        case .unsigned(let value): out.unsigned(value)
        case .double(let value): out.double(value)
        case .string(let value): out.string(value)
        case .bytes(let value): out.bytes(value)
        case .list(let values):
            out.list(count: values.count)
            for value in values { value.write(to: &out) }
        case .map(let entries):
            out.map(count: entries.count)
            for entry in entries {
                out.key(entry.key)
                entry.value.write(to: &out)
            }
        }
    }
}

// MARK: - Reading

extension WireValue {
    /// Parses one value that must fill `bytes` exactly.
    public init(parsing bytes: [UInt8], limits: Limits = .unlimited) throws {
        var reader = Reader(bytes: bytes, limits: limits)
        self = try reader.value(depth: 0)
        guard reader.offset == bytes.count else { throw FrameError.malformed("bytes after the message") }
    }

    struct Reader {
        let bytes: [UInt8]
        var offset = 0
        let limits: Limits
        /// Entries the message may still hold (Limits.values).
        private var valuesLeft: Int

        init(bytes: [UInt8], limits: Limits) {
            self.bytes = bytes
            self.limits = limits
            valuesLeft = limits.values
        }

        mutating func value(depth: Int) throws -> WireValue {
            guard depth <= WireValue.maxDepth else { throw FrameError.malformed("nested more than \(WireValue.maxDepth) deep") }
            guard let tag = Tag(rawValue: try byte()) else { throw FrameError.malformed("unknown value tag") }
            switch tag {
            case .null: return .null
            case .false: return .bool(false)
            case .true: return .bool(true)
            case .int: return .int(Self.unzigzag(try varint()))
            case .unsigned: return .unsigned(try varint())
            case .double:
                let raw = try take(8)
                return .double(Double(bitPattern: raw.reduce(0) { $0 << 8 | UInt64($1) }))
            case .string: return .string(try text())
            case .bytes: return .bytes(Array(try take(try length())))
            case .list:
                let count = try count()
                var values: [WireValue] = []
                values.reserveCapacity(count)
                for _ in 0..<count { values.append(try value(depth: depth + 1)) }
                return .list(values)
            case .map:
                let count = try count()
                var entries: [(key: String, value: WireValue)] = []
                entries.reserveCapacity(count)
                for _ in 0..<count {
                    entries.append((try text(), try value(depth: depth + 1)))
                }
                return .map(entries)
            }
        }

        /// Passes over one value as `value` reads it, with the same checks, without
        /// building it: a field a reader does not know costs no memory.
        mutating func skip(depth: Int) throws {
            guard depth <= WireValue.maxDepth else { throw FrameError.malformed("nested more than \(WireValue.maxDepth) deep") }
            guard let tag = Tag(rawValue: try byte()) else { throw FrameError.malformed("unknown value tag") }
            switch tag {
            case .null, .false, .true: return
            case .int, .unsigned: _ = try varint()
            case .double: _ = try take(8)
            case .string: try checkText()
            case .bytes: _ = try take(try length())
            case .list: for _ in 0..<(try count()) { try skip(depth: depth + 1) }
            case .map:
                for _ in 0..<(try count()) {
                    try checkText()
                    try skip(depth: depth + 1)
                }
            }
        }

        /// A signed integer from its zigzag form (WireWriter.int).
        static func unzigzag(_ raw: UInt64) -> Int64 { Int64(bitPattern: raw >> 1) ^ -Int64(bitPattern: raw & 1) }

        mutating func byte() throws -> UInt8 {
            guard offset < bytes.count else { throw FrameError.malformed("message cut short") }
            defer { offset += 1 }
            return bytes[offset]
        }

        mutating func varint() throws -> UInt64 {
            var result: UInt64 = 0
            for shift in stride(from: 0, to: 64, by: 7) {
                let next = try byte()
                result |= UInt64(next & 0x7f) << UInt64(shift)
                if next < 0x80 { return result }
            }
            throw FrameError.malformed("integer too long")
        }

        /// A count or length, which can never exceed the bytes left (each element takes one).
        mutating func length() throws -> Int {
            let value = try varint()
            guard value <= UInt64(bytes.count - offset) else { throw FrameError.malformed("length beyond the message") }
            return Int(value)
        }

        /// The entry count of a list or map, within the bytes left and the limits.
        mutating func count() throws -> Int {
            let count = try length()
            guard count <= limits.entries else {
                throw FrameError.malformed("a list or map of \(count) entries, beyond the \(limits.entries) one may have")
            }
            guard count <= valuesLeft else {
                throw FrameError.malformed("its lists and maps have more than the \(limits.values) entries they may have in all")
            }
            valuesLeft -= count
            return count
        }

        mutating func take(_ count: Int) throws -> ArraySlice<UInt8> {
            guard count <= bytes.count - offset else { throw FrameError.malformed("message cut short") }
            defer { offset += count }
            return bytes[offset..<offset + count]
        }

        mutating func text() throws -> String {
            let raw = try take(try length())
            return try raw.withUnsafeBufferPointer { utf8 in
                // ASCII, almost every text here, needs no validation; the generic validating
                // initialiser cost more than the rest of a keychain request's reading.
                if utf8.allSatisfy({ $0 < 0x80 }) { return String(decoding: utf8, as: UTF8.self) }
                guard let text = String(validating: utf8, as: UTF8.self) else { throw FrameError.malformed("text is not UTF-8") }
                return text
            }
        }

        /// Passes over a text, refusing it as `text` would.
        private mutating func checkText() throws {
            let raw = try take(try length())
            let valid = raw.withUnsafeBufferPointer { utf8 in
                var decoder = UTF8()
                var bytes = utf8.makeIterator()
                while true {
                    switch decoder.decode(&bytes) {
                    case .scalarValue: continue
                    case .emptyInput: return true
                    case .error: return false
                    }
                }
            }
            guard valid else { throw FrameError.malformed("text is not UTF-8") }
        }
    }
}
