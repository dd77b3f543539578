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

    /// The most a sealed record takes: an item at its largest, the record's own pairs
    /// (`deleted`, `writer`, the name `data`) and the seal. A payload on the server
    /// above it is refused without being fetched: a server or member that wrote one
    /// (PostgreSQL takes up to 1 GB) would otherwise fill the daemon's memory.
    static let maxSealedSize = SyncedItem.maxEncodedSize + 256 + AEAD.overhead

    func encoded() -> SecureBuffer {
        var texts: [[UInt8]] = []
        for (name, value) in attributes.sorted(by: { $0.key < $1.key }) { texts += [Array(name.utf8), Array(value.utf8)] }
        texts += [Array("deleted".utf8), Array((deleted ? "1" : "0").utf8), Array("writer".utf8), Array(writer.utf8),
                  Array("data".utf8)]
        let empty = SecureBuffer(count: 0)
        let data = secret ?? empty
        return withExtendedLifetime(data) {
            Self.withBuffers(texts) { LengthPrefixed.secret($0 + [data.bytes]) }
        }
    }

    private static func withBuffers<R>(_ arrays: [[UInt8]], _ body: ([UnsafeRawBufferPointer]) -> R) -> R {
        // Copies into one contiguous array keep every pointer valid for the whole call.
        let joined = arrays.flatMap { $0 }
        return joined.withUnsafeBytes { all in
            var offset = 0
            let pointers = arrays.map { array -> UnsafeRawBufferPointer in
                defer { offset += array.count }
                return UnsafeRawBufferPointer(rebasing: all[offset..<(offset + array.count)])
            }
            return body(pointers)
        }
    }

    /// Parses an opened record; nil when it is not one.
    init?(decoding plaintext: SecureBuffer) {
        guard let fields = LengthPrefixed.fields(plaintext.bytes), fields.count % 2 == 0 else { return nil }
        var attributes: [String: String] = [:]
        var secret: SecureBuffer?
        for pair in stride(from: 0, to: fields.count, by: 2) {
            let name = LengthPrefixed.text(fields[pair])
            if name == "data" {
                secret = SecureBuffer(copying: fields[pair + 1])
            } else {
                attributes[name] = LengthPrefixed.text(fields[pair + 1])
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
