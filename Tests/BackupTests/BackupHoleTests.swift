// A file's holes in the backup stream (format version 2): they read back in place,
// between and after its bytes; a version 1 backup, which has none, still reads, and
// one that claims a hole is refused as damaged; a version above this dpfs's is
// refused as newer, not misread.
import Backup
import DataProtection
import Foundation
import Glibc
import Testing

@Suite struct BackupHoleTests {
    enum Part: Equatable {
        case bytes([UInt8])
        case hole(UInt64)
    }

    /// A backup of one file record with `parts` as its content, under a header of
    /// `version`, in an unlinked temporary file; its descriptor.
    func makeBackup(_ parts: [Part], version: UInt16 = BackupHeader.currentVersion) throws -> Int32 {
        let fd = try TestBackupFile.unlinked("holes")
        let stream = try TestBackupFile.stream(into: fd, version: version)
        try stream.writeRecord(BackupRecord(.file, ["path": Array("Documents/sparse".utf8)]))
        for part in parts {
            switch part {
            case .bytes(let bytes): try bytes.withUnsafeBytes { try stream.writePiece($0) }
            case .hole(let length): try stream.writeHole(length)
            }
        }
        try stream.endContent()
        try stream.writeRecord(BackupRecord(.end, ["count": Array("1".utf8)]))
        try stream.finish()
        #expect(lseek(fd, 0, SEEK_SET) == 0)
        return fd
    }

    func readBack(_ fd: Int32) throws -> [Part] {
        let stream = try OpeningStream(fd: fd, password: TestBackupFile.password())
        #expect(try stream.readRecord().kind == .file)
        var parts: [Part] = []
        try stream.readFileContent { part in
            switch part {
            case .bytes(let piece): parts.append(.bytes(Array(piece)))
            case .hole(let length): parts.append(.hole(length))
            }
        }
        #expect(try stream.readRecord().kind == .end)
        try stream.expectEnd()
        return parts
    }

    @Test func holesReadBackInPlace() throws {
        let parts: [Part] = [.hole(1 << 30), .bytes([1, 2, 3]), .hole(4096), .bytes([4]), .hole(1 << 40)]
        let fd = try makeBackup(parts)
        defer { close(fd) }
        #expect(try readBack(fd) == parts)
    }

    @Test func aFileOfOnlyAHole() throws {
        let fd = try makeBackup([.hole(5 << 20)])
        defer { close(fd) }
        #expect(try readBack(fd) == [.hole(5 << 20)])
    }

    @Test func anItemsDataHasNoHole() throws {
        let fd = try makeBackup([.bytes([1]), .hole(10)])
        defer { close(fd) }
        let stream = try OpeningStream(fd: fd, password: TestBackupFile.password())
        _ = try stream.readRecord()
        #expect(throws: BackupError.damaged("an item's data holds a hole")) { try stream.readContent { _ in } }
    }

    @Test func aVersion1BackupStillReads() throws {
        let fd = try makeBackup([.bytes([7, 8, 9])], version: 1)
        defer { close(fd) }
        #expect(try readBack(fd) == [.bytes([7, 8, 9])])
    }

    @Test func aVersion1BackupWithAHoleIsDamaged() throws {
        let fd = try makeBackup([.bytes([7]), .hole(100)], version: 1)
        defer { close(fd) }
        #expect(throws: BackupError.self) { try readBack(fd) }
    }

    @Test func holesPastAnOffTAreRefused() throws {
        let fd = try makeBackup([.hole(UInt64(Int64.max)), .bytes([1])])
        defer { close(fd) }
        #expect(throws: BackupError.damaged("a file is too large")) { try readBack(fd) }
    }

    /// A restore writes a file into a mount, which holds none larger than
    /// BlockLayout.maxPlainSize: a larger one is refused when the backup is checked.
    @Test func aFilePastTheLargestAMountHoldsIsRefused() throws {
        let fd = try makeBackup([.hole(UInt64(Int64.max) - 1), .bytes([1])])
        defer { close(fd) }
        #expect(throws: BackupError.damaged("a file is too large")) { try readBack(fd) }
        let past = try makeBackup([.hole(UInt64(BlockLayout.maxPlainSize)), .bytes([1])])
        defer { close(past) }
        #expect(throws: BackupError.damaged("a file is too large")) { try readBack(past) }
    }

    @Test func aFileOfTheLargestSizeReadsBack() throws {
        let parts: [Part] = [.hole(UInt64(BlockLayout.maxPlainSize) - 1), .bytes([1])]
        let fd = try makeBackup(parts)
        defer { close(fd) }
        #expect(try readBack(fd) == parts)
    }

    @Test func aNewerVersionIsRefusedAsNewer() throws {
        let fd = try makeBackup([.bytes([1])], version: BackupHeader.currentVersion + 1)
        defer { close(fd) }
        #expect(throws: BackupError.newerVersion(BackupHeader.currentVersion + 1)) { try readBack(fd) }
        #expect(BackupError.newerVersion(3).description.contains("newer dpfs"))
    }
}
