// Length-prefixed fields, the one encoding of every sync format (dpfs(5) "Keychain
// sync"): each field preceded by its length as a big-endian u32, so no two field lists
// encode alike. Secrets are written into and read out of locked memory directly.
import DataProtection

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
        var bytes: [UInt8] = []
        for field in fields {
            let utf8 = Array(field.utf8)
            let count = UInt32(utf8.count)
            bytes += [UInt8(count >> 24), UInt8(count >> 16 & 0xff), UInt8(count >> 8 & 0xff), UInt8(count & 0xff)]
            bytes += utf8
        }
        return bytes
    }

    /// The fields of an encoding, as slices of `bytes` (valid while `bytes` is); nil when
    /// the bytes are not such a list.
    static func fields(_ bytes: UnsafeRawBufferPointer) -> [UnsafeRawBufferPointer]? {
        var fields: [UnsafeRawBufferPointer] = []
        var offset = 0
        while offset < bytes.count {
            guard bytes.count - offset >= 4 else { return nil }
            let count = Int(bytes[offset]) << 24 | Int(bytes[offset + 1]) << 16 | Int(bytes[offset + 2]) << 8 | Int(bytes[offset + 3])
            offset += 4
            guard bytes.count - offset >= count else { return nil }
            fields.append(UnsafeRawBufferPointer(rebasing: bytes[offset..<(offset + count)]))
            offset += count
        }
        return fields
    }

    static func text(_ field: UnsafeRawBufferPointer) -> String { String(decoding: field, as: UTF8.self) }
}
