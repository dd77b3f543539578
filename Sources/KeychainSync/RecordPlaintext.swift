// A record's plaintext, built and read in locked memory: length-prefixed name/value
// pairs (dpfs(5) "Keychain sync"), the item's attributes, `deleted` (1 for a
// tombstone), `writer` (the device that made this version) and, last, `data`: the
// item's secret, which never passes through a Swift array.
import DataProtection
import ItemStore

struct RecordPlaintext {
    var attributes: [String: String]
    var deleted: Bool
    var writer: String
    var secret: SecureBuffer?

    var modified: Double { attributes["modified"].flatMap(Double.init) ?? 0 }

    func encoded() -> SecureBuffer {
        var pairs = attributes.sorted { $0.key < $1.key }.map { (Array($0.key.utf8), Array($0.value.utf8)) }
        pairs.append((Array("deleted".utf8), Array((deleted ? "1" : "0").utf8)))
        pairs.append((Array("writer".utf8), Array(writer.utf8)))
        let dataName = Array("data".utf8)
        let secretCount = secret?.count ?? 0
        let total = pairs.reduce(0) { $0 + 8 + $1.0.count + $1.1.count } + 8 + dataName.count + secretCount
        let buffer = SecureBuffer(count: total)
        let out = buffer.mutableBytes
        var offset = 0
        func put(_ bytes: UnsafeRawBufferPointer) {
            let count = UInt32(bytes.count)
            for (index, byte) in [UInt8(count >> 24), UInt8(count >> 16 & 0xff), UInt8(count >> 8 & 0xff), UInt8(count & 0xff)].enumerated() {
                out[offset + index] = byte
            }
            offset += 4
            if let base = bytes.baseAddress, bytes.count > 0 {
                out.baseAddress.map { ($0 + offset).copyMemory(from: base, byteCount: bytes.count) }
            }
            offset += bytes.count
        }
        for (name, value) in pairs {
            name.withUnsafeBytes(put)
            value.withUnsafeBytes(put)
        }
        dataName.withUnsafeBytes(put)
        if let secret { put(secret.bytes) } else { [UInt8]().withUnsafeBytes(put) }
        return buffer
    }

    /// Parses an opened record; nil when it is not one.
    init?(decoding plaintext: SecureBuffer) {
        let bytes = plaintext.bytes
        var offset = 0
        var attributes: [String: String] = [:]
        var secret: SecureBuffer?
        func field() -> UnsafeRawBufferPointer? {
            guard bytes.count - offset >= 4 else { return nil }
            let count = Int(bytes[offset]) << 24 | Int(bytes[offset + 1]) << 16 | Int(bytes[offset + 2]) << 8 | Int(bytes[offset + 3])
            offset += 4
            guard bytes.count - offset >= count else { return nil }
            defer { offset += count }
            return UnsafeRawBufferPointer(rebasing: bytes[offset..<(offset + count)])
        }
        while offset < bytes.count {
            guard let nameBytes = field(), let value = field() else { return nil }
            let name = String(decoding: nameBytes, as: UTF8.self)
            if name == "data" {
                secret = SecureBuffer(copying: value)
            } else {
                attributes[name] = String(decoding: value, as: UTF8.self)
            }
        }
        guard let deleted = attributes.removeValue(forKey: "deleted"), let writer = attributes.removeValue(forKey: "writer") else {
            return nil
        }
        self.attributes = attributes
        self.deleted = deleted == "1"
        self.writer = writer
        self.secret = secret
    }

    init(attributes: [String: String], deleted: Bool, writer: String, secret: SecureBuffer?) {
        self.attributes = attributes; self.deleted = deleted; self.writer = writer; self.secret = secret
    }
}
