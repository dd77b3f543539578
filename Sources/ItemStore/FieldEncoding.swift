// The one length-prefixed field list encoding: read (FieldEncoding) and built
// (FieldList), in an array or, for a secret, in locked memory.
import DataProtection
import Foundation

/// Length-prefixed concatenation: each field preceded by its length as a big-endian
/// u32, so no two field lists encode alike. The item store's attribute records and
/// keychain sync's formats alike.
public enum FieldEncoding {
    public static func lengthPrefixed(_ fields: [[UInt8]]) -> [UInt8] {
        var list = FieldList(capacity: fields.reduce(0) { $0 + 4 + $1.count })
        for field in fields { list.append(field) }
        return list.bytes
    }

    /// The fields of `lengthPrefixed`, or nil when the bytes are not such a list.
    static func fields(_ bytes: UnsafeRawBufferPointer) -> [[UInt8]]? {
        slices(bytes)?.map { Array($0) }
    }

    /// The fields as slices of `bytes` (valid while `bytes` is, and as secret as it:
    /// nothing is copied), or nil when the bytes are not such a list.
    public static func slices(_ bytes: UnsafeRawBufferPointer) -> [UnsafeRawBufferPointer]? {
        var fields: [UnsafeRawBufferPointer] = []
        var offset = 0
        while offset < bytes.count {
            guard bytes.count - offset >= 4 else { return nil }
            let count = Int(bytes[offset]) << 24 | Int(bytes[offset + 1]) << 16 | Int(bytes[offset + 2]) << 8
                | Int(bytes[offset + 3])
            offset += 4
            guard bytes.count - offset >= count else { return nil }
            fields.append(UnsafeRawBufferPointer(rebasing: bytes[offset..<(offset + count)]))
            offset += count
        }
        return fields
    }
}

/// FieldEncoding's list built field by field, straight from the strings and bytes it
/// is given: the lookups of every keychain call make several, and a list of arrays
/// made first cost an allocation per field.
public struct FieldList {
    public private(set) var bytes: [UInt8] = []

    public init(capacity: Int = 256) { bytes.reserveCapacity(capacity) }

    public mutating func append(_ field: UnsafeRawBufferPointer) {
        withUnsafeBytes(of: Self.prefix(field)) { bytes.append(contentsOf: $0) }
        bytes.append(contentsOf: field)
    }

    public mutating func append(_ field: [UInt8]) { field.withUnsafeBytes { append($0) } }

    public mutating func append(_ field: Data) { field.withUnsafeBytes { append($0) } }

    public mutating func append(_ text: String) {
        var text = text
        text.withUTF8 { append(UnsafeRawBufferPointer($0)) }
    }

    /// The list of `fields` in a new locked buffer, for a list that holds a secret: each
    /// field is copied there from where it is, never through an array.
    public static func secret(_ fields: [UnsafeRawBufferPointer]) -> SecureBuffer {
        let buffer = SecureBuffer(count: fields.reduce(0) { $0 + MemoryLayout<UInt32>.size + $1.count })
        let target = buffer.mutableBytes
        var offset = 0
        for field in fields {
            target.storeBytes(of: prefix(field), toByteOffset: offset, as: UInt32.self)
            offset += MemoryLayout<UInt32>.size
            if let source = field.baseAddress, field.count > 0 {
                UnsafeMutableRawBufferPointer(rebasing: target[offset..<(offset + field.count)])
                    .copyMemory(from: UnsafeRawBufferPointer(start: source, count: field.count))
            }
            offset += field.count
        }
        return buffer
    }

    /// A field's length prefix, in the order it is written.
    private static func prefix(_ field: UnsafeRawBufferPointer) -> UInt32 { UInt32(field.count).bigEndian }
}
