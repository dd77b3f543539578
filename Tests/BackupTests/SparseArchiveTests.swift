// A sparse file through the archiver and the extractor, on a plain directory that
// carries the mount's class attribute itself: the backup holds its data, not its
// holes, and the file restored has its size, its bytes and about its blocks, also when
// it ends in a hole or is nothing but one.
import Backup
import CLinux
import DataProtection
import DPFSProtocol
import Foundation
import Glibc
import Testing

@Suite struct SparseArchiveTests {
    static let mebibyte: off_t = 1 << 20

    func makeDirectory(_ name: String) throws -> String {
        let path = NSTemporaryDirectory() + "/dpfs-sparse-\(name)-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: false)
        #expect(setxattr(path, MountAttributes.protection, "none", 4, 0) == 0)
        return path
    }

    /// A file of `size` bytes, `text` written at each of `offsets`, the rest holes.
    func makeSparse(_ path: String, size: off_t, at offsets: [off_t], text: String = "abc") throws {
        let fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        try #require(fd >= 0)
        defer { close(fd) }
        #expect(ftruncate(fd, size) == 0)
        for offset in offsets { #expect(pwrite(fd, text, text.utf8.count, offset) == text.utf8.count) }
        #expect(setxattr(path, MountAttributes.protection, "none", 4, 0) == 0)
    }

    func info(_ path: String) -> stat {
        var info = stat()
        #expect(stat(path, &info) == 0)
        return info
    }

    /// Archives `source` and extracts it into `target`; the backup's size.
    func roundTrip(_ source: String, into target: String) throws -> off_t {
        let path = source + ".dpfsbackup"
        defer { unlink(path) }
        let fd = try TestBackupFile.create(path)
        defer { close(fd) }
        let password = TestBackupFile.password()
        let stream = try TestBackupFile.stream(into: fd)
        try stream.writeRecord(BackupRecord(.device))
        let archiver = SandboxArchiver(root: source, into: stream)
        try archiver.archive()
        try stream.writeRecord(BackupRecord(.end, ["count": Array(String(archiver.records + 1).utf8)]))
        try stream.finish()

        #expect(lseek(fd, 0, SEEK_SET) == 0)
        let reading = try OpeningStream(fd: fd, password: password)
        _ = try BackupCheck.run(reading)
        try reading.rewind()
        let extractor = SandboxExtractor(root: target)
        while true {
            let record = try reading.readRecord()
            if record.kind == .end { break }
            if record.kind == .device { continue }
            try extractor.apply(record, content: reading)
        }
        try extractor.finishDirectories()
        return info(path).st_size
    }

    @Test func holesStayHoles() throws {
        let source = try makeDirectory("source")
        let target = try makeDirectory("target")
        defer {
            try? FileManager.default.removeItem(atPath: source)
            try? FileManager.default.removeItem(atPath: target)
        }
        let mebibyte = Self.mebibyte
        try makeSparse(source + "/between", size: 256 * mebibyte, at: [0, 100 * mebibyte, 256 * mebibyte - 3])
        try makeSparse(source + "/tail", size: 128 * mebibyte, at: [5])
        try makeSparse(source + "/hole", size: 64 * mebibyte, at: [])
        let size = try roundTrip(source, into: target)
        #expect(size < 1 << 20, "the backup holds the data, not the holes")
        for name in ["between", "tail", "hole"] {
            let before = info(source + "/" + name)
            let after = info(target + "/" + name)
            #expect(after.st_size == before.st_size, "\(name) keeps its size")
            #expect(after.st_blocks <= before.st_blocks + 64, "\(name) keeps its holes: \(after.st_blocks) blocks, \(before.st_blocks) before")
        }
        let restored = try #require(FileHandle(forReadingAtPath: target + "/between"))
        defer { try? restored.close() }
        for offset in [0, 100 * mebibyte, 256 * mebibyte - 3] {
            try restored.seek(toOffset: UInt64(offset))
            #expect(try restored.read(upToCount: 3) == Data("abc".utf8))
        }
        try restored.seek(toOffset: UInt64(50 * mebibyte))
        #expect(try restored.read(upToCount: 4) == Data([0, 0, 0, 0]))
    }
}
