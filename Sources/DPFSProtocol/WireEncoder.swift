// Encodes a typed message to a WireValue through its Encodable conformance: a keyed
// container becomes a map, an unkeyed one a list, Data and [UInt8] become bytes.
import Foundation

public enum WireEncoder {
    public static func encode<T: Encodable>(_ value: T) throws -> [UInt8] {
        try wireValue(of: value, codingPath: []).serialized()
    }

    static func wireValue<T: Encodable>(of value: T, codingPath: [any CodingKey]) throws -> WireValue {
        if let direct = WireValue.direct(value) { return direct }
        let node = WireNode()
        try value.encode(to: NodeEncoder(node: node, codingPath: codingPath))
        return node.resolved()
    }
}

extension WireValue {
    /// Byte strings travel as bytes, not as a list of numbers; the dictionaries of the
    /// messages are written directly, as the standard library's conformance goes key by
    /// key through a container, several times slower.
    static func direct<T: Encodable>(_ value: T) -> WireValue? {
        // Comparing types first: a failed dynamic cast costs more than the encoding.
        if T.self == Data.self, let data = value as? Data { return .bytes([UInt8](data)) }
        if T.self == [UInt8].self, let bytes = value as? [UInt8] { return .bytes(bytes) }
        if T.self == [String: String].self, let strings = value as? [String: String] {
            return .map(strings.map { ($0.key, .string($0.value)) })
        }
        if T.self == [String: Bool].self, let flags = value as? [String: Bool] {
            return .map(flags.map { ($0.key, .bool($0.value)) })
        }
        return nil
    }
}

/// A value being encoded: containers are filled after they are handed out, so they
/// hold nodes that are resolved to a WireValue once the whole message is encoded.
final class WireNode {
    enum Content {
        case value(WireValue)
        case list([WireNode])
        case map([(key: String, node: WireNode)])
    }

    var content = Content.value(.null)

    func resolved() -> WireValue {
        switch content {
        case .value(let value): return value
        case .list(let nodes): return .list(nodes.map { $0.resolved() })
        case .map(let entries): return .map(entries.map { ($0.key, $0.node.resolved()) })
        }
    }

    func becomeMap() {
        if case .map = content { return }
        content = .map([])
    }

    func becomeList() {
        if case .list = content { return }
        content = .list([])
    }

    func append(key: String, _ node: WireNode) {
        guard case .map(var entries) = content else { return }
        content = .value(.null)
        entries.append((key, node))
        content = .map(entries)
    }

    func append(_ node: WireNode) {
        guard case .list(var nodes) = content else { return }
        content = .value(.null)
        nodes.append(node)
        content = .list(nodes)
    }

    var listCount: Int {
        if case .list(let nodes) = content { return nodes.count }
        return 0
    }

    static func holding(_ value: WireValue) -> WireNode {
        let node = WireNode()
        node.content = .value(value)
        return node
    }
}

struct NodeEncoder: Encoder {
    let node: WireNode
    let codingPath: [any CodingKey]
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
        node.becomeMap()
        return KeyedEncodingContainer(KeyedNodeEncoder(node: node, codingPath: codingPath))
    }

    func unkeyedContainer() -> any UnkeyedEncodingContainer {
        node.becomeList()
        return UnkeyedNodeEncoder(node: node, codingPath: codingPath)
    }

    func singleValueContainer() -> any SingleValueEncodingContainer {
        SingleNodeEncoder(node: node, codingPath: codingPath)
    }

    /// The node for one element: bytes and primitives directly, anything else through
    /// its own encode(to:).
    static func node<T: Encodable>(for value: T, codingPath: [any CodingKey]) throws -> WireNode {
        if let direct = WireValue.direct(value) { return .holding(direct) }
        let node = WireNode()
        try value.encode(to: NodeEncoder(node: node, codingPath: codingPath))
        return node
    }
}

struct KeyedNodeEncoder<Key: CodingKey>: KeyedEncodingContainerProtocol {
    let node: WireNode
    let codingPath: [any CodingKey]

    mutating func encodeNil(forKey key: Key) throws { put(.null, key) }
    mutating func encode(_ value: Bool, forKey key: Key) throws { put(.bool(value), key) }
    mutating func encode(_ value: String, forKey key: Key) throws { put(.string(value), key) }
    mutating func encode(_ value: Double, forKey key: Key) throws { put(.double(value), key) }
    mutating func encode(_ value: Float, forKey key: Key) throws { put(.double(Double(value)), key) }
    mutating func encode(_ value: Int, forKey key: Key) throws { put(.int(Int64(value)), key) }
    mutating func encode(_ value: Int8, forKey key: Key) throws { put(.int(Int64(value)), key) }
    mutating func encode(_ value: Int16, forKey key: Key) throws { put(.int(Int64(value)), key) }
    mutating func encode(_ value: Int32, forKey key: Key) throws { put(.int(Int64(value)), key) }
    mutating func encode(_ value: Int64, forKey key: Key) throws { put(.int(value), key) }
    mutating func encode(_ value: UInt, forKey key: Key) throws { put(.unsigned(UInt64(value)), key) }
    mutating func encode(_ value: UInt8, forKey key: Key) throws { put(.unsigned(UInt64(value)), key) }
    mutating func encode(_ value: UInt16, forKey key: Key) throws { put(.unsigned(UInt64(value)), key) }
    mutating func encode(_ value: UInt32, forKey key: Key) throws { put(.unsigned(UInt64(value)), key) }
    mutating func encode(_ value: UInt64, forKey key: Key) throws { put(.unsigned(value), key) }

    mutating func encode<T: Encodable>(_ value: T, forKey key: Key) throws {
        node.append(key: key.stringValue, try NodeEncoder.node(for: value, codingPath: codingPath + [key]))
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type, forKey key: Key) -> KeyedEncodingContainer<NestedKey> {
        let child = WireNode()
        child.becomeMap()
        node.append(key: key.stringValue, child)
        return KeyedEncodingContainer(KeyedNodeEncoder<NestedKey>(node: child, codingPath: codingPath + [key]))
    }

    mutating func nestedUnkeyedContainer(forKey key: Key) -> any UnkeyedEncodingContainer {
        let child = WireNode()
        child.becomeList()
        node.append(key: key.stringValue, child)
        return UnkeyedNodeEncoder(node: child, codingPath: codingPath + [key])
    }

    mutating func superEncoder() -> any Encoder { superEncoder(named: "super", path: codingPath) }
    mutating func superEncoder(forKey key: Key) -> any Encoder { superEncoder(named: key.stringValue, path: codingPath + [key]) }

    private func superEncoder(named name: String, path: [any CodingKey]) -> any Encoder {
        let child = WireNode()
        node.append(key: name, child)
        return NodeEncoder(node: child, codingPath: path)
    }

    private func put(_ value: WireValue, _ key: Key) { node.append(key: key.stringValue, .holding(value)) }
}

struct UnkeyedNodeEncoder: UnkeyedEncodingContainer {
    let node: WireNode
    let codingPath: [any CodingKey]
    var count: Int { node.listCount }

    mutating func encodeNil() throws { node.append(.holding(.null)) }
    mutating func encode(_ value: Bool) throws { node.append(.holding(.bool(value))) }
    mutating func encode(_ value: String) throws { node.append(.holding(.string(value))) }
    mutating func encode(_ value: Int) throws { node.append(.holding(.int(Int64(value)))) }
    mutating func encode(_ value: Double) throws { node.append(.holding(.double(value))) }

    mutating func encode<T: Encodable>(_ value: T) throws {
        node.append(try NodeEncoder.node(for: value, codingPath: codingPath + [WireIndexKey(count)]))
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type) -> KeyedEncodingContainer<NestedKey> {
        let child = WireNode()
        child.becomeMap()
        let path = codingPath + [WireIndexKey(count)]
        node.append(child)
        return KeyedEncodingContainer(KeyedNodeEncoder<NestedKey>(node: child, codingPath: path))
    }

    mutating func nestedUnkeyedContainer() -> any UnkeyedEncodingContainer {
        let child = WireNode()
        child.becomeList()
        let path = codingPath + [WireIndexKey(count)]
        node.append(child)
        return UnkeyedNodeEncoder(node: child, codingPath: path)
    }

    mutating func superEncoder() -> any Encoder {
        let child = WireNode()
        let path = codingPath + [WireIndexKey(count)]
        node.append(child)
        return NodeEncoder(node: child, codingPath: path)
    }
}

struct SingleNodeEncoder: SingleValueEncodingContainer {
    let node: WireNode
    let codingPath: [any CodingKey]

    mutating func encodeNil() throws { node.content = .value(.null) }
    mutating func encode(_ value: Bool) throws { node.content = .value(.bool(value)) }
    mutating func encode(_ value: String) throws { node.content = .value(.string(value)) }
    mutating func encode(_ value: Double) throws { node.content = .value(.double(value)) }
    mutating func encode(_ value: Float) throws { node.content = .value(.double(Double(value))) }
    mutating func encode(_ value: Int) throws { node.content = .value(.int(Int64(value))) }
    mutating func encode(_ value: Int8) throws { node.content = .value(.int(Int64(value))) }
    mutating func encode(_ value: Int16) throws { node.content = .value(.int(Int64(value))) }
    mutating func encode(_ value: Int32) throws { node.content = .value(.int(Int64(value))) }
    mutating func encode(_ value: Int64) throws { node.content = .value(.int(value)) }
    mutating func encode(_ value: UInt) throws { node.content = .value(.unsigned(UInt64(value))) }
    mutating func encode(_ value: UInt8) throws { node.content = .value(.unsigned(UInt64(value))) }
    mutating func encode(_ value: UInt16) throws { node.content = .value(.unsigned(UInt64(value))) }
    mutating func encode(_ value: UInt32) throws { node.content = .value(.unsigned(UInt64(value))) }
    mutating func encode(_ value: UInt64) throws { node.content = .value(.unsigned(value)) }

    mutating func encode<T: Encodable>(_ value: T) throws {
        if let direct = WireValue.direct(value) {
            node.content = .value(direct)
        } else {
            try value.encode(to: NodeEncoder(node: node, codingPath: codingPath))
        }
    }
}

/// The coding-path key of a list element.
struct WireIndexKey: CodingKey {
    let intValue: Int?
    var stringValue: String { intValue.map(String.init) ?? "" }
    init(_ index: Int) { intValue = index }
    init?(stringValue: String) { return nil }
    init?(intValue: Int) { self.intValue = intValue }
}
