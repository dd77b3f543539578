// Writes values in the control body's form (WireValue) straight to bytes: a WireValue
// tree writes itself through it, and the keychain call's messages, sent most, are
// written through it field by field without building the tree.
import Foundation

struct WireWriter {
    private(set) var bytes: [UInt8] = []

    init(capacity: Int = 128) { bytes.reserveCapacity(capacity) }

    mutating func null() { bytes.append(WireValue.Tag.null.rawValue) }

    mutating func bool(_ value: Bool) { bytes.append(value ? WireValue.Tag.true.rawValue : WireValue.Tag.false.rawValue) }

    mutating func int(_ value: Int64) {
        bytes.append(WireValue.Tag.int.rawValue)
        varint(UInt64(bitPattern: (value << 1) ^ (value >> 63)))
    }

    mutating func unsigned(_ value: UInt64) {
        bytes.append(WireValue.Tag.unsigned.rawValue)
        varint(value)
    }

    mutating func double(_ value: Double) {
        bytes.append(WireValue.Tag.double.rawValue)
        let bits = value.bitPattern
        for shift in stride(from: 56, through: 0, by: -8) { bytes.append(UInt8(truncatingIfNeeded: bits >> UInt64(shift))) }
    }

    mutating func string(_ value: String) {
        bytes.append(WireValue.Tag.string.rawValue)
        text(value)
    }

    mutating func bytes<Bytes: Collection<UInt8>>(_ value: Bytes) {
        bytes.append(WireValue.Tag.bytes.rawValue)
        varint(UInt64(value.count))
        bytes.append(contentsOf: value)
    }

    /// Starts a list of `count` values, which follow.
    mutating func list(count: Int) {
        bytes.append(WireValue.Tag.list.rawValue)
        varint(UInt64(count))
    }

    /// Starts a map of `count` entries, each a `key` followed by its value.
    mutating func map(count: Int) {
        bytes.append(WireValue.Tag.map.rawValue)
        varint(UInt64(count))
    }

    mutating func key(_ name: String) { text(name) }

    /// A map of text to text, in the dictionary's order.
    mutating func strings(_ dictionary: [String: String]) {
        map(count: dictionary.count)
        for (key, value) in dictionary {
            text(key)
            string(value)
        }
    }

    private mutating func text(_ value: String) {
        var value = value
        value.withUTF8 { utf8 in
            varint(UInt64(utf8.count))
            bytes.append(contentsOf: utf8)
        }
    }

    private mutating func varint(_ value: UInt64) {
        var value = value
        while value >= 0x80 {
            bytes.append(UInt8(truncatingIfNeeded: value) | 0x80)
            value >>= 7
        }
        bytes.append(UInt8(value))
    }
}
