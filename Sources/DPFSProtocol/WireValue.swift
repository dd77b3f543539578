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
    public init(parsing bytes: [UInt8]) throws {
        var reader = Reader(bytes: bytes)
        self = try reader.value(depth: 0)
        guard reader.offset == bytes.count else { throw FrameError.malformed("bytes after the message") }
    }

    struct Reader {
        let bytes: [UInt8]
        var offset = 0

        mutating func value(depth: Int) throws -> WireValue {
            guard depth <= WireValue.maxDepth else { throw FrameError.malformed("nested too deeply") }
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
                let count = try length()
                var values: [WireValue] = []
                values.reserveCapacity(count)
                for _ in 0..<count { values.append(try value(depth: depth + 1)) }
                return .list(values)
            case .map:
                let count = try length()
                var entries: [(key: String, value: WireValue)] = []
                entries.reserveCapacity(count)
                for _ in 0..<count {
                    entries.append((try text(), try value(depth: depth + 1)))
                }
                return .map(entries)
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
    }
}
