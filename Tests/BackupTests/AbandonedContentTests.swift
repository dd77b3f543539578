// A file whose content a backup abandoned (dpfs backup --skip-damaged): the reader
// says so, the check leaves the file out of the count and refuses a hard link to it,
// and a version 1 backup, which has no such thing, is refused for one.
import Backup
import DataProtection
import Foundation
import Glibc
import Testing

@Suite struct AbandonedContentTests {
    func record(_ kind: RecordKind, _ path: String, target: String? = nil) -> BackupRecord {
        var fields: [String: [UInt8]] = ["path": Array(path.utf8), "mode": Array("420".utf8), "class": Array("none".utf8),
                                         "mtime": Array("1.000000000".utf8), "atime": Array("1.000000000".utf8)]
        if let target { fields["target"] = Array(target.utf8) }
        return BackupRecord(kind, fields)
    }

    /// A backup of a root, a whole file "a", an abandoned file "b", then `last` if any;
    /// an unlinked temporary file's descriptor, at its start.
    func makeBackup(version: UInt16 = BackupHeader.currentVersion, last: BackupRecord? = nil) throws -> Int32 {
        let fd = try TestBackupFile.unlinked("abandoned")
        let stream = try TestBackupFile.stream(into: fd, version: version)
        try stream.writeRecord(BackupRecord(.device))
        try stream.writeRecord(record(.directory, ""))
        try stream.writeRecord(record(.file, "a"))
        try [UInt8]("whole".utf8).withUnsafeBytes { try stream.writePiece($0) }
        try stream.endContent()
        try stream.writeRecord(record(.file, "b"))
        try [UInt8]("cut".utf8).withUnsafeBytes { try stream.writePiece($0) }
        try stream.abandonContent()
        var count = 4
        if let last {
            try stream.writeRecord(last)
            count += 1
        }
        try stream.writeRecord(BackupRecord(.end, ["count": Array(String(count).utf8)]))
        try stream.finish()
        #expect(lseek(fd, 0, SEEK_SET) == 0)
        return fd
    }

    @Test func anAbandonedFileIsLeftOut() throws {
        let fd = try makeBackup()
        defer { close(fd) }
        let contents = try BackupCheck.run(try OpeningStream(fd: fd, password: TestBackupFile.password()))
        #expect(contents.files == 1)
        #expect(contents.damagedFiles == 1)
    }

    @Test func aHardLinkToItIsRefused() throws {
        let fd = try makeBackup(last: record(.hardLink, "c", target: "b"))
        defer { close(fd) }
        #expect(throws: BackupError.damaged("a hard link points to no file of the backup")) {
            try BackupCheck.run(try OpeningStream(fd: fd, password: TestBackupFile.password()))
        }
    }

    @Test func aVersion1BackupHasNone() throws {
        let fd = try makeBackup(version: 1)
        defer { close(fd) }
        #expect(throws: BackupError.self) { try BackupCheck.run(try OpeningStream(fd: fd, password: TestBackupFile.password())) }
    }
}
