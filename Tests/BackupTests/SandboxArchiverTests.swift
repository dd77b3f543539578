// The archiver on a plain directory that carries the mount's class attribute itself:
// what is removed while it runs, between the listing of its directory and its own
// reading (a file, a link, a whole directory, the first name of a hard-linked file), is
// left out and counted; the backup it writes still passes the restore's check.
import Backup
import CLinux
import DataProtection
import DPFSProtocol
import Foundation
import Glibc
import Testing

@Suite struct SandboxArchiverTests {
    /// The archiver reads each node's class as the user.* attribute a dpfs mount shows;
    /// a filesystem that keeps none cannot stand in for the mount.
    static let attributesWork: Bool = {
        let path = NSTemporaryDirectory() + "/dpfs-archiver-probe-\(getpid())"
        guard FileManager.default.createFile(atPath: path, contents: nil) else { return false }
        defer { unlink(path) }
        return setxattr(path, MountAttributes.protection, "none", 4, 0) == 0
    }()

    func makeTree() throws -> String {
        let root = NSTemporaryDirectory() + "/dpfs-archiver-test-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        let manager = FileManager.default
        for directory in ["", "/b", "/b/sub"] {
            try manager.createDirectory(atPath: root + directory, withIntermediateDirectories: false)
        }
        for file in ["/a", "/b/inner", "/b/sub/deep", "/c", "/d"] {
            #expect(manager.createFile(atPath: root + file, contents: Data("content of \(file)".utf8)))
        }
        #expect(link(root + "/d", root + "/z") == 0)
        #expect(symlink("a", root + "/s") == 0)
        for path in ["", "/a", "/b", "/b/sub", "/b/inner", "/b/sub/deep", "/c", "/d"] {
            #expect(setxattr(root + path, MountAttributes.protection, "none", 4, 0) == 0)
        }
        return root
    }

    /// Archives `root`, calling `during` at the archiver's first progress call (after
    /// the first file, "a", is read); the archiver and the records the backup holds.
    func archive(_ root: String, during: @escaping () -> Void) throws -> (SandboxArchiver, [BackupRecord]) {
        let path = root + ".dpfsbackup"
        defer { unlink(path) }
        let fd = try TestBackupFile.create(path)
        defer { close(fd) }
        let password = TestBackupFile.password()
        let stream = try TestBackupFile.stream(into: fd)
        try stream.writeRecord(BackupRecord(.device))
        let archiver = SandboxArchiver(root: root, into: stream)
        var called = false
        archiver.progress = {
            if !called { during() }
            called = true
        }
        try archiver.archive()
        try stream.writeRecord(BackupRecord(.end, ["count": Array(String(archiver.records + 1).utf8)]))
        try stream.finish()

        #expect(lseek(fd, 0, SEEK_SET) == 0)
        let reading = try OpeningStream(fd: fd, password: password)
        _ = try BackupCheck.run(reading)
        try reading.rewind()
        var records: [BackupRecord] = []
        while true {
            let record = try reading.readRecord()
            if record.kind == .end { break }
            if record.kind == .file { try reading.readFileContent { _ in } }
            records.append(record)
        }
        return (archiver, records)
    }

    func paths(_ records: [BackupRecord]) -> [String] {
        records.compactMap { $0.fields["path"].map { String(decoding: $0, as: UTF8.self) } }
    }

    @Test(.enabled(if: attributesWork)) func nothingRemoved() throws {
        let root = try makeTree()
        defer { try? FileManager.default.removeItem(atPath: root) }
        let (archiver, records) = try archive(root) {}
        #expect(paths(records) == ["", "a", "b", "b/inner", "b/sub", "b/sub/deep", "c", "d", "s", "z"])
        #expect(records.last?.kind == .hardLink)
        #expect(archiver.vanished == 0)
    }

    @Test(.enabled(if: attributesWork)) func removedEntriesAreLeftOut() throws {
        let root = try makeTree()
        defer { try? FileManager.default.removeItem(atPath: root) }
        let (archiver, records) = try archive(root) {
            for path in ["/b", "/c", "/d", "/s"] { try? FileManager.default.removeItem(atPath: root + path) }
        }
        // z, d's other name, is now the file's only name: a file, not a link to d.
        #expect(paths(records) == ["", "a", "z"])
        #expect(records.map(\.kind) == [.device, .directory, .file, .file])
        #expect(archiver.vanished == 4)
        #expect(archiver.files == 2)
    }
}
