// Length-prefixed fields (the item store's FieldEncoding), the one encoding of every
// sync format (dpfs(5) "Keychain sync"). Secrets are written into and read out of
// locked memory directly.
import DataProtection
import ItemStore

enum LengthPrefixed {
    /// The encoding of `fields` in a new locked buffer.
    static func secret(_ fields: [UnsafeRawBufferPointer]) -> SecureBuffer {
        let buffer = SecureBuffer(count: fields.reduce(0) { $0 + 4 + $1.count })
        guard let base = buffer.mutableBytes.baseAddress else { return buffer }
        var offset = 0
        for field in fields {
            let count = UInt32(field.count)
            for (index, byte) in [UInt8(count >> 24), UInt8(count >> 16 & 0xff), UInt8(count >> 8 & 0xff), UInt8(count & 0xff)].enumerated() {
                base.storeBytes(of: byte, toByteOffset: offset + index, as: UInt8.self)
            }
            offset += 4
            if let source = field.baseAddress, field.count > 0 {
                (base + offset).copyMemory(from: source, byteCount: field.count)
            }
            offset += field.count
        }
        return buffer
    }

    /// The encoding of strings (for associated data and MAC input, never secret).
    static func encode(_ fields: [String]) -> [UInt8] {
        FieldEncoding.lengthPrefixed(fields.map { Array($0.utf8) })
    }

    /// The fields of an encoding, as slices of `bytes`; nil when not such a list.
    static func fields(_ bytes: UnsafeRawBufferPointer) -> [UnsafeRawBufferPointer]? {
        FieldEncoding.slices(bytes)
    }

    static func text(_ field: UnsafeRawBufferPointer) -> String { String(decoding: field, as: UTF8.self) }
}
