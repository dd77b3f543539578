// What the backup tests share: their password, in locked memory as a user's would be,
// and the file a test's backup is sealed into, under the cheap header.
import Backup
import DataProtection
import Foundation
import Glibc
import Testing

enum TestBackupFile {
    static func password() -> SecureBuffer {
        Array("correct horse".utf8).withUnsafeBytes { SecureBuffer(copying: $0) }
    }

    /// A new, empty file at `path`, open for reading and writing.
    static func create(_ path: String) throws -> Int32 {
        let fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        try #require(fd >= 0)
        return fd
    }

    /// A new temporary file named for `purpose`, already unlinked, open for reading
    /// and writing.
    static func unlinked(_ purpose: String) throws -> Int32 {
        let path = NSTemporaryDirectory() + "/dpfs-backup-\(purpose)-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        let fd = try create(path)
        unlink(path)
        return fd
    }

    /// A stream sealing into `fd` under the cheap header, of format `version`.
    static func stream(into fd: Int32, version: UInt16 = BackupHeader.currentVersion) throws -> SealingStream {
        var header = BackupStreamTests.cheap
        header.version = version
        return try SealingStream(fd: fd, password: password(), header: header)
    }
}
