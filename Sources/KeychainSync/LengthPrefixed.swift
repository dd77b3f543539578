// Length-prefixed fields (the item store's FieldEncoding), the one encoding of every
// sync format (dpfs(5) "Keychain sync"). Secrets are written into and read out of
// locked memory directly.
import DataProtection
import ItemStore

enum LengthPrefixed {
    /// The encoding of `fields` in a new locked buffer.
    static func secret(_ fields: [UnsafeRawBufferPointer]) -> SecureBuffer { FieldList.secret(fields) }

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
