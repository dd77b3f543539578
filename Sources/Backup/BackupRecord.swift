// The records inside a backup's plaintext stream (dpfs(5), "Backup file"):
//   kind u8 | fields length u32 | fields | [content]
// Fields are name/value pairs, each part a u32 length then its bytes; a file's or an
// item's content follows as pieces (u32 length, bytes), ended by a piece of length 0,
// so a file is streamed without its size being known first. From format version 2 a
// file's content may also hold holes: a marker in place of a piece's length, then the
// hole's length (u64), and no bytes, so that a sparse file is neither read nor stored
// whole. Integers are big-endian.
import DataProtection
import DPFSProtocol

public enum RecordKind: UInt8, Sendable {
    /// The device's settings: default protection class, the sandbox's app.
    case device = 1
    /// A registered app: bundle ID, entitlements plist, whether it is the sandbox's.
    case app = 2
    /// A keychain item: its attributes; its data as content.
    case item = 3
    case directory = 4
    /// A regular file; its bytes as content.
    case file = 5
    case symlink = 6
    /// A further name of a file already in the backup.
    case hardLink = 7
    /// The last record: how many came before it.
    case end = 0xff
}

public struct BackupRecord: Sendable {
    public var kind: RecordKind
    public var fields: [String: [UInt8]]

    public init(_ kind: RecordKind, _ fields: [String: [UInt8]] = [:]) {
        self.kind = kind
        self.fields = fields
    }

    public func text(_ name: String) -> String? {
        fields[name].flatMap { String(validating: $0, as: UTF8.self) }
    }

    public func integer(_ name: String) -> Int64? { text(name).flatMap { Int64($0) } }

    /// The most a record's fields may take: a path, a symlink's target or an
    /// entitlements plist fits many times over.
    static let maxFieldsSize = 1 << 20
    /// The largest content piece a writer makes and a reader accepts.
    public static let maxPieceSize = 1 << 20
    /// Where a piece's length would be: a hole in a file's content (format version 2).
    static let holeMarker: [UInt8] = [0xff, 0xff, 0xff, 0xff]
    /// Where a piece's length would be: the end of the content of a file that could not
    /// be read whole (a damaged file, `dpfs backup --skip-damaged`): a restore leaves
    /// the file out (format version 2).
    static let abandonedMarker: [UInt8] = [0xff, 0xff, 0xff, 0xfe]
}

/// One part of a file's content as a reader meets it.
public enum ContentPart {
    case bytes(UnsafeRawBufferPointer)
    /// That many bytes of the file that are a hole: never written, read as zeros.
    case hole(UInt64)
}

extension SealingStream {
    /// Writes a record's kind and fields; content, if its kind has any, follows with
    /// `writePiece` and `endContent`.
    public func writeRecord(_ record: BackupRecord) throws {
        var encoded: [UInt8] = []
        for (name, value) in record.fields.sorted(by: { $0.key < $1.key }) {
            encoded += BigEndian.bytes(UInt64(name.utf8.count), count: 4) + Array(name.utf8)
            encoded += BigEndian.bytes(UInt64(value.count), count: 4) + value
        }
        try write([record.kind.rawValue] + BigEndian.bytes(UInt64(encoded.count), count: 4))
        try write(encoded)
    }

    /// Writes `bytes` as one or more pieces of at most `maxPieceSize`.
    public func writePiece(_ bytes: UnsafeRawBufferPointer) throws {
        var offset = 0
        while offset < bytes.count {
            let count = min(BackupRecord.maxPieceSize, bytes.count - offset)
            try write(BigEndian.bytes(UInt64(count), count: 4))
            try write(UnsafeRawBufferPointer(rebasing: bytes[offset..<offset + count]))
            offset += count
        }
    }

    /// Writes a hole of `length` bytes in a file's content.
    public func writeHole(_ length: UInt64) throws {
        guard length > 0 else { return }
        try write(BackupRecord.holeMarker + BigEndian.bytes(length, count: 8))
    }

    public func endContent() throws { try write([0, 0, 0, 0]) }

    /// Ends a file's content as abandoned: what came of it is to be dropped.
    public func abandonContent() throws { try write(BackupRecord.abandonedMarker) }
}

extension OpeningStream {
    /// The next record's kind and fields.
    public func readRecord() throws -> BackupRecord {
        let head = try readBytes(5)
        guard let kind = RecordKind(rawValue: head[0]) else { throw BackupError.damaged("it holds a record of unknown kind \(head[0])") }
        let length = Int(BigEndian.value(head[1..<5]))
        guard length <= BackupRecord.maxFieldsSize else { throw BackupError.damaged("a record is too large") }
        let encoded = try readBytes(length)
        var fields: [String: [UInt8]] = [:]
        var offset = 0
        func part() throws -> [UInt8] {
            guard encoded.count - offset >= 4 else { throw BackupError.damaged("a record's fields are cut short") }
            let count = Int(BigEndian.value(encoded[offset..<offset + 4]))
            offset += 4
            guard encoded.count - offset >= count else { throw BackupError.damaged("a record's fields are cut short") }
            defer { offset += count }
            return Array(encoded[offset..<offset + count])
        }
        while offset < encoded.count {
            guard let name = String(validating: try part(), as: UTF8.self) else { throw BackupError.damaged("a field name is not text") }
            fields[name] = try part()
        }
        return BackupRecord(kind, fields)
    }

    /// Hands each content piece to `body` in locked memory, until the content ends; a
    /// hole is refused (an item's data has none).
    public func readContent(_ body: (UnsafeRawBufferPointer) throws -> Void) throws {
        let whole = try readFileContent { part in
            guard case .bytes(let piece) = part else { throw BackupError.damaged("an item's data holds a hole") }
            try body(piece)
        }
        guard whole else { throw BackupError.damaged("an item's data is abandoned") }
    }

    /// Hands each part of a file's content to `body`, bytes in locked memory, until the
    /// content ends; false when it ends abandoned (the file is to be left out). A hole
    /// and an abandoned end are accepted from format version 2 on, and the file's size
    /// must stay within the largest file a mount holds (BlockLayout.maxPlainSize).
    @discardableResult
    public func readFileContent(_ body: (ContentPart) throws -> Void) throws -> Bool {
        let piece = pieceBuffer ?? SecureBuffer(count: BackupRecord.maxPieceSize)
        pieceBuffer = piece
        var size: UInt64 = 0
        let limit = UInt64(BlockLayout.maxPlainSize)
        while true {
            let head = try readBytes(4)
            if head == BackupRecord.holeMarker {
                guard version >= 2 else { throw BackupError.damaged("a content piece is too large") }
                let length = BigEndian.value(try readBytes(8))
                guard length > 0 else { throw BackupError.damaged("a file's hole is not valid") }
                guard length <= limit - size else { throw BackupError.damaged("a file is too large") }
                size += length
                try body(.hole(length))
                continue
            }
            if head == BackupRecord.abandonedMarker {
                guard version >= 2 else { throw BackupError.damaged("a content piece is too large") }
                return false
            }
            let length = Int(BigEndian.value(head))
            if length == 0 { return true }
            guard length <= BackupRecord.maxPieceSize else { throw BackupError.damaged("a content piece is too large") }
            guard UInt64(length) <= limit - size else { throw BackupError.damaged("a file is too large") }
            size += UInt64(length)
            let part = UnsafeMutableRawBufferPointer(rebasing: piece.mutableBytes[0..<length])
            try read(into: part)
            try body(.bytes(UnsafeRawBufferPointer(part)))
        }
    }
}
