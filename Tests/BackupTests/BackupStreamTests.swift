// The backup stream: what is written reads back, records and content included; a
// wrong password, any flipped byte, a cut at any chunk boundary or inside a chunk,
// and bytes appended after the end are each refused. Cheap Argon2id parameters keep
// the tests fast; the format stores them, so readers need nothing else.
import Backup
import DataProtection
import Foundation
import Glibc
import Testing

@Suite struct BackupStreamTests {
    static let cheap = BackupHeader.fresh(opsLimit: 1, memLimit: 8192)

    func password(_ text: String) -> SecureBuffer {
        Array(text.utf8).withUnsafeBytes { SecureBuffer(copying: $0) }
    }

    /// A backup of `size` content bytes in a temporary file; its path.
    func makeBackup(size: Int) throws -> String {
        let path = NSTemporaryDirectory() + "/dpfs-backup-test-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        let fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0o600)
        #expect(fd >= 0)
        defer { close(fd) }
        let stream = try SealingStream(fd: fd, password: password("correct horse"), header: Self.cheap)
        try stream.writeRecord(BackupRecord(.file, ["path": Array("Documents/a".utf8), "mode": Array("420".utf8)]))
        let content = (0..<size).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        try content.withUnsafeBytes { try stream.writePiece($0) }
        try stream.endContent()
        try stream.writeRecord(BackupRecord(.end, ["count": Array("1".utf8)]))
        try stream.finish()
        return path
    }

    /// Reads the whole backup back; the content of its file record.
    func readBackup(_ path: String, password text: String = "correct horse") throws -> [UInt8] {
        let fd = open(path, O_RDONLY)
        defer { close(fd) }
        let stream = try OpeningStream(fd: fd, password: password(text))
        let record = try stream.readRecord()
        #expect(record.kind == .file)
        #expect(record.text("path") == "Documents/a")
        var content: [UInt8] = []
        try stream.readContent { content += $0 }
        #expect(try stream.readRecord().kind == .end)
        try stream.expectEnd()
        return content
    }

    @Test(arguments: [0, 1, 65_000, 65_536 - 14, 200_000, 1_048_576 + 3])
    func roundTrip(size: Int) throws {
        let path = try makeBackup(size: size)
        defer { unlink(path) }
        let content = try readBackup(path)
        #expect(content == (0..<size).map { UInt8(truncatingIfNeeded: $0 &* 31) })
    }

    @Test func wrongPasswordIsRefused() throws {
        let path = try makeBackup(size: 100)
        defer { unlink(path) }
        #expect(throws: BackupError.wrongPassword) { try readBackup(path, password: "correct horsf") }
    }

    @Test func everyFlippedByteIsRefused() throws {
        let path = try makeBackup(size: 300)
        defer { unlink(path) }
        let original = try [UInt8](Data(contentsOf: URL(fileURLWithPath: path)))
        for offset in stride(from: 0, to: original.count, by: 7) {
            var damaged = original
            damaged[offset] ^= 0x01
            try Data(damaged).write(to: URL(fileURLWithPath: path))
            #expect(throws: BackupError.self) { try readBackup(path) }
        }
    }

    @Test func truncationIsRefused() throws {
        let path = try makeBackup(size: 3 * 65_536 + 100)
        defer { unlink(path) }
        let original = try [UInt8](Data(contentsOf: URL(fileURLWithPath: path)))
        let chunk = SealingStream.chunkSize + 17
        // At each chunk boundary, and inside the last chunk.
        for cut in [BackupHeader.size, BackupHeader.size + chunk, BackupHeader.size + 2 * chunk,
                    BackupHeader.size + 3 * chunk, original.count - 1] {
            try Data(original[0..<cut]).write(to: URL(fileURLWithPath: path))
            #expect(throws: BackupError.self) { try readBackup(path) }
        }
        try Data(original[0..<(BackupHeader.size + 3 * chunk)]).write(to: URL(fileURLWithPath: path))
        #expect(throws: BackupError.truncated) { try readBackup(path) }
    }

    @Test func trailingBytesAreRefused() throws {
        // After a short final chunk the added byte becomes part of it: it fails.
        let path = try makeBackup(size: 10)
        defer { unlink(path) }
        let original = try [UInt8](Data(contentsOf: URL(fileURLWithPath: path)))
        try Data(original + [0]).write(to: URL(fileURLWithPath: path))
        #expect(throws: BackupError.self) { try readBackup(path) }
        // After a full-size final chunk the byte is seen as trailing.
        let full = try makeBackup(size: SealingStream.chunkSize - 70)  // records take 70 bytes
        defer { unlink(full) }
        let whole = try [UInt8](Data(contentsOf: URL(fileURLWithPath: full)))
        #expect(whole.count == BackupHeader.size + SealingStream.chunkSize + 17)
        try Data(whole + [0]).write(to: URL(fileURLWithPath: full))
        #expect(throws: BackupError.trailingData) { try readBackup(full) }
    }

    @Test func notABackupIsRefused() throws {
        let path = NSTemporaryDirectory() + "/dpfs-backup-test-plain-\(getpid())"
        try Data("just some text, long enough to fill a header and then some more of it".utf8)
            .write(to: URL(fileURLWithPath: path))
        defer { unlink(path) }
        #expect(throws: BackupError.notABackup) { try readBackup(path) }
    }
}
