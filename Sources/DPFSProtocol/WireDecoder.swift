// Decodes a typed message from a WireValue through its Decodable conformance. A value
// of the wrong kind, a number out of its type's range or a missing key is a
// DecodingError; the reader never trusts a length it has not checked (WireValue).
import Foundation

public enum WireDecoder {
    /// `limits`: how many values the body may hold (a request's are WireValue.Limits.request).
    public static func decode<T: Decodable>(_ type: T.Type, from bytes: [UInt8],
                                            limits: WireValue.Limits = .unlimited) throws -> T {
        try decode(type, from: WireValue(parsing: bytes, limits: limits), codingPath: [])
    }

    static func decode<T: Decodable>(_ type: T.Type, from value: WireValue, codingPath: [any CodingKey]) throws -> T {
        if T.self == Data.self || T.self == [UInt8].self {
            guard case .bytes(let bytes) = value else { throw mismatch(type, value, codingPath) }
            if let data = Data(bytes) as? T { return data }
            if let bytes = bytes as? T { return bytes }
        }
        // The standard library's Dictionary conformance goes key by key through a
        // container, several times slower than reading the map: attributes are hot.
        if T.self == [String: String].self, let result = try stringMap(value, codingPath, WirePrimitive.string) as? T {
            return result
        }
        if T.self == [String: Bool].self, let result = try stringMap(value, codingPath, WirePrimitive.bool) as? T {
            return result
        }
        return try T(from: ValueDecoder(value: value, codingPath: codingPath))
    }

    static func stringMap<V>(_ value: WireValue, _ path: [any CodingKey],
                              _ element: (WireValue, [any CodingKey]) throws -> V) throws -> [String: V] {
        guard case .map(let entries) = value else { throw mismatch([String: V].self, value, path) }
        var result: [String: V] = [:]
        result.reserveCapacity(entries.count)
        for entry in entries where result[entry.key] == nil {
            result[entry.key] = try element(entry.value, path)
        }
        return result
    }

    static func mismatch(_ type: Any.Type, _ value: WireValue, _ path: [any CodingKey]) -> DecodingError {
        .typeMismatch(type, .init(codingPath: path, debugDescription: "expected \(type), found \(value.kind)"))
    }
}

extension WireValue {
    var kind: String {
        switch self {
        case .null: return "nothing"
        case .bool: return "a boolean"
        case .int, .unsigned: return "an integer"
        case .double: return "a number"
        case .string: return "text"
        case .bytes: return "bytes"
        case .list: return "a list"
        case .map: return "a map"
        }
    }
}

struct ValueDecoder: Decoder {
    let value: WireValue
    let codingPath: [any CodingKey]
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        guard case .map(let entries) = value else { throw WireDecoder.mismatch([String: Any].self, value, codingPath) }
        return KeyedDecodingContainer(KeyedValueDecoder(entries: entries, codingPath: codingPath))
    }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
        guard case .list(let values) = value else { throw WireDecoder.mismatch([Any].self, value, codingPath) }
        return UnkeyedValueDecoder(values: values, codingPath: codingPath)
    }

    func singleValueContainer() throws -> any SingleValueDecodingContainer {
        SingleValueDecoder(value: value, codingPath: codingPath)
    }
}

/// The conversions every container shares: a WireValue to a primitive of the asked type.
enum WirePrimitive {
    static func bool(_ value: WireValue, _ path: [any CodingKey]) throws -> Bool {
        guard case .bool(let result) = value else { throw WireDecoder.mismatch(Bool.self, value, path) }
        return result
    }

    static func string(_ value: WireValue, _ path: [any CodingKey]) throws -> String {
        guard case .string(let result) = value else { throw WireDecoder.mismatch(String.self, value, path) }
        return result
    }

    static func double(_ value: WireValue, _ path: [any CodingKey]) throws -> Double {
        switch value {
        case .double(let result): return result
        case .int(let integer): return Double(integer)
        case .unsigned(let integer): return Double(integer)
        default: throw WireDecoder.mismatch(Double.self, value, path)
        }
    }

    static func integer<T: FixedWidthInteger>(_ type: T.Type, _ value: WireValue, _ path: [any CodingKey]) throws -> T {
        let result: T?
        switch value {
        case .int(let integer): result = T(exactly: integer)
        case .unsigned(let integer): result = T(exactly: integer)
        default: throw WireDecoder.mismatch(type, value, path)
        }
        guard let result else {
            throw DecodingError.dataCorrupted(.init(codingPath: path, debugDescription: "\(value) does not fit \(type)"))
        }
        return result
    }
}

struct KeyedValueDecoder<Key: CodingKey>: KeyedDecodingContainerProtocol {
    let entries: [(key: String, value: WireValue)]
    let codingPath: [any CodingKey]
    /// Where each key's first entry is, for maps too large to search (a dictionary
    /// decodes every key it lists: a linear search each would be quadratic).
    private let index: [String: Int]?

    init(entries: [(key: String, value: WireValue)], codingPath: [any CodingKey]) {
        self.entries = entries
        self.codingPath = codingPath
        index = entries.count > 16
            ? Dictionary(entries.enumerated().map { ($1.key, $0) }, uniquingKeysWith: { first, _ in first })
            : nil
    }

    var allKeys: [Key] { entries.compactMap { Key(stringValue: $0.key) } }

    func contains(_ key: Key) -> Bool { position(of: key.stringValue) != nil }

    func decodeNil(forKey key: Key) throws -> Bool { try value(for: key) == .null }
    func decode(_ type: Bool.Type, forKey key: Key) throws -> Bool { try WirePrimitive.bool(value(for: key), path(key)) }
    func decode(_ type: String.Type, forKey key: Key) throws -> String { try WirePrimitive.string(value(for: key), path(key)) }
    func decode(_ type: Double.Type, forKey key: Key) throws -> Double { try WirePrimitive.double(value(for: key), path(key)) }
    func decode(_ type: Float.Type, forKey key: Key) throws -> Float { Float(try WirePrimitive.double(value(for: key), path(key))) }
    func decode(_ type: Int.Type, forKey key: Key) throws -> Int { try integer(type, key) }
    func decode(_ type: Int8.Type, forKey key: Key) throws -> Int8 { try integer(type, key) }
    func decode(_ type: Int16.Type, forKey key: Key) throws -> Int16 { try integer(type, key) }
    func decode(_ type: Int32.Type, forKey key: Key) throws -> Int32 { try integer(type, key) }
    func decode(_ type: Int64.Type, forKey key: Key) throws -> Int64 { try integer(type, key) }
    func decode(_ type: UInt.Type, forKey key: Key) throws -> UInt { try integer(type, key) }
    func decode(_ type: UInt8.Type, forKey key: Key) throws -> UInt8 { try integer(type, key) }
    func decode(_ type: UInt16.Type, forKey key: Key) throws -> UInt16 { try integer(type, key) }
    func decode(_ type: UInt32.Type, forKey key: Key) throws -> UInt32 { try integer(type, key) }
    func decode(_ type: UInt64.Type, forKey key: Key) throws -> UInt64 { try integer(type, key) }

    func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T {
        try WireDecoder.decode(type, from: value(for: key), codingPath: path(key))
    }

    func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type, forKey key: Key) throws -> KeyedDecodingContainer<NestedKey> {
        try ValueDecoder(value: value(for: key), codingPath: path(key)).container(keyedBy: type)
    }

    func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer {
        try ValueDecoder(value: value(for: key), codingPath: path(key)).unkeyedContainer()
    }

    func superDecoder() throws -> any Decoder {
        ValueDecoder(value: position(of: "super").map { entries[$0].value } ?? .null, codingPath: codingPath)
    }

    func superDecoder(forKey key: Key) throws -> any Decoder {
        ValueDecoder(value: position(of: key.stringValue).map { entries[$0].value } ?? .null, codingPath: path(key))
    }

    private func position(of key: String) -> Int? {
        if let index { return index[key] }
        return entries.firstIndex { $0.key == key }
    }

    private func value(for key: Key) throws -> WireValue {
        guard let position = position(of: key.stringValue) else {
            throw DecodingError.keyNotFound(key, .init(codingPath: codingPath, debugDescription: "no \(key.stringValue)"))
        }
        return entries[position].value
    }

    private func integer<T: FixedWidthInteger>(_ type: T.Type, _ key: Key) throws -> T {
        try WirePrimitive.integer(type, value(for: key), path(key))
    }

    private func path(_ key: Key) -> [any CodingKey] { codingPath + [key] }
}

struct UnkeyedValueDecoder: UnkeyedDecodingContainer {
    let values: [WireValue]
    let codingPath: [any CodingKey]
    var currentIndex = 0

    init(values: [WireValue], codingPath: [any CodingKey]) {
        self.values = values
        self.codingPath = codingPath
    }

    var count: Int? { values.count }
    var isAtEnd: Bool { currentIndex >= values.count }

    mutating func decodeNil() throws -> Bool {
        guard try peek() == .null else { return false }
        currentIndex += 1
        return true
    }

    mutating func decode(_ type: Bool.Type) throws -> Bool { try next { try WirePrimitive.bool($0, $1) } }
    mutating func decode(_ type: String.Type) throws -> String { try next { try WirePrimitive.string($0, $1) } }
    mutating func decode(_ type: Double.Type) throws -> Double { try next { try WirePrimitive.double($0, $1) } }
    mutating func decode(_ type: Int.Type) throws -> Int { try next { try WirePrimitive.integer(type, $0, $1) } }

    mutating func decode<T: Decodable>(_ type: T.Type) throws -> T {
        try next { try WireDecoder.decode(type, from: $0, codingPath: $1) }
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type) throws -> KeyedDecodingContainer<NestedKey> {
        try next { try ValueDecoder(value: $0, codingPath: $1).container(keyedBy: type) }
    }

    mutating func nestedUnkeyedContainer() throws -> any UnkeyedDecodingContainer {
        try next { try ValueDecoder(value: $0, codingPath: $1).unkeyedContainer() }
    }

    mutating func superDecoder() throws -> any Decoder {
        try next { ValueDecoder(value: $0, codingPath: $1) }
    }

    private func peek() throws -> WireValue {
        guard !isAtEnd else {
            throw DecodingError.valueNotFound(Any.self, .init(codingPath: codingPath, debugDescription: "the list has ended"))
        }
        return values[currentIndex]
    }

    private mutating func next<T>(_ body: (WireValue, [any CodingKey]) throws -> T) throws -> T {
        let result = try body(try peek(), codingPath + [WireIndexKey(currentIndex)])
        currentIndex += 1
        return result
    }
}

struct SingleValueDecoder: SingleValueDecodingContainer {
    let value: WireValue
    let codingPath: [any CodingKey]

    func decodeNil() -> Bool { value == .null }
    func decode(_ type: Bool.Type) throws -> Bool { try WirePrimitive.bool(value, codingPath) }
    func decode(_ type: String.Type) throws -> String { try WirePrimitive.string(value, codingPath) }
    func decode(_ type: Double.Type) throws -> Double { try WirePrimitive.double(value, codingPath) }
    func decode(_ type: Float.Type) throws -> Float { Float(try WirePrimitive.double(value, codingPath)) }
    func decode(_ type: Int.Type) throws -> Int { try WirePrimitive.integer(type, value, codingPath) }
    func decode(_ type: Int8.Type) throws -> Int8 { try WirePrimitive.integer(type, value, codingPath) }
    func decode(_ type: Int16.Type) throws -> Int16 { try WirePrimitive.integer(type, value, codingPath) }
    func decode(_ type: Int32.Type) throws -> Int32 { try WirePrimitive.integer(type, value, codingPath) }
    func decode(_ type: Int64.Type) throws -> Int64 { try WirePrimitive.integer(type, value, codingPath) }
    func decode(_ type: UInt.Type) throws -> UInt { try WirePrimitive.integer(type, value, codingPath) }
    func decode(_ type: UInt8.Type) throws -> UInt8 { try WirePrimitive.integer(type, value, codingPath) }
    func decode(_ type: UInt16.Type) throws -> UInt16 { try WirePrimitive.integer(type, value, codingPath) }
    func decode(_ type: UInt32.Type) throws -> UInt32 { try WirePrimitive.integer(type, value, codingPath) }
    func decode(_ type: UInt64.Type) throws -> UInt64 { try WirePrimitive.integer(type, value, codingPath) }

    func decode<T: Decodable>(_ type: T.Type) throws -> T {
        try WireDecoder.decode(type, from: value, codingPath: codingPath)
    }
}
