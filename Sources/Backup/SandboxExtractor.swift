// The second pass of a restore, for the tree: re-creates each directory, file, symbolic
// and hard link of a (checked) backup under a mounted new device's sandbox, through the
// mount, so the filesystem itself gives every file its class, key and name sealing.
// A file is made with its class before its first byte, so no byte is ever sealed under
// another class; modes and times are set once content is written, and a directory's
// only after its children (a read-only directory is filled first, its time is not moved
// by them).
import DataProtection
import DPFSProtocol
import CLinux
import Glibc

public final class SandboxExtractor {
    public typealias Failure = SandboxArchiver.Failure

    private let root: String
    private var directories: [(path: [UInt8], mode: mode_t, times: [timespec])] = []
    /// Called after each piece written; what it throws (an interruption) ends the restore.
    public var progress: (() throws -> Void)?

    public init(root: String) { self.root = root }

    private func full(_ path: [UInt8]) -> [UInt8] {
        path.isEmpty ? Array(root.utf8) : Array(root.utf8) + [UInt8(ascii: "/")] + path
    }

    private func display(_ path: [UInt8]) -> String { root + "/" + String(decoding: path, as: UTF8.self) }

    /// Applies one tree record (checked by BackupCheck); a file's content is read from `stream`.
    public func apply(_ record: BackupRecord, content stream: OpeningStream) throws {
        guard let path = record.fields["path"] else { throw BackupError.damaged("a record has no path") }
        let target = full(path)
        switch record.kind {
        case .directory:
            if !path.isEmpty {
                let rc = target.withCString { mkdir($0, 0o700) }
                // The layout directories (Documents, Library, …) are there already.
                guard rc == 0 || errno == EEXIST else { throw Failure(operation: "mkdir", path: display(path), code: errno) }
            }
            try setClass(record, target, path)
            directories.append((path, mode(record), times(record)))
        case .file:
            let fd = target.withCString { open($0, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600) }
            guard fd >= 0 else { throw Failure(operation: "create", path: display(path), code: errno) }
            do {
                try setClass(record, target, path)
                try stream.readContent { piece in try Self.writeAll(fd, piece, self.display(path)); try self.progress?() }
            } catch {
                close(fd)
                throw error
            }
            guard close(fd) == 0 else { throw Failure(operation: "close", path: display(path), code: errno) }
            try finish(target, path, mode: mode(record), times: times(record))
        case .symlink:
            guard let link = record.fields["target"] else { throw BackupError.damaged("a symbolic link has no target") }
            let rc = link.withCString { linkTarget in target.withCString { symlink(linkTarget, $0) } }
            guard rc == 0 else { throw Failure(operation: "symlink", path: display(path), code: errno) }
            try setTimes(target, path, times(record))
        case .hardLink:
            guard let first = record.fields["target"] else { throw BackupError.damaged("a hard link has no target") }
            let rc = full(first).withCString { existing in target.withCString { link(existing, $0) } }
            guard rc == 0 else { throw Failure(operation: "link", path: display(path), code: errno) }
        default:
            throw BackupError.damaged("a tree record of kind \(record.kind) is not a tree record")
        }
    }

    /// Gives every directory its mode and times, deepest first.
    public func finishDirectories() throws {
        for directory in directories.reversed() {
            try finish(full(directory.path), directory.path, mode: directory.mode, times: directory.times)
        }
        directories = []
    }

    private func mode(_ record: BackupRecord) -> mode_t { mode_t(record.integer("mode") ?? 0o600) }

    private func times(_ record: BackupRecord) -> [timespec] {
        let mtime = RecordTime.decode(record.fields["mtime"]) ?? timespec(tv_sec: 0, tv_nsec: (1 << 30) - 1)
        let atime = RecordTime.decode(record.fields["atime"]) ?? mtime
        return [atime, mtime]
    }

    private func setClass(_ record: BackupRecord, _ target: [UInt8], _ path: [UInt8]) throws {
        guard let name = record.fields["class"] else { return }
        let rc = target.withCString { setxattr($0, MountAttributes.protection, name, name.count, 0) }
        guard rc == 0 else { throw Failure(operation: "set the protection class of", path: display(path), code: errno) }
    }

    private func finish(_ target: [UInt8], _ path: [UInt8], mode: mode_t, times: [timespec]) throws {
        guard target.withCString({ chmod($0, mode) }) == 0 else { throw Failure(operation: "chmod", path: display(path), code: errno) }
        try setTimes(target, path, times)
    }

    private func setTimes(_ target: [UInt8], _ path: [UInt8], _ times: [timespec]) throws {
        let rc = target.withCString { utimensat(AT_FDCWD, $0, times, AT_SYMLINK_NOFOLLOW) }
        guard rc == 0 else { throw Failure(operation: "set the times of", path: display(path), code: errno) }
    }

    static func writeAll(_ fd: Int32, _ bytes: UnsafeRawBufferPointer, _ path: String) throws {
        var done = 0
        while done < bytes.count {
            let n = write(fd, bytes.start + done, bytes.count - done)
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { throw Failure(operation: "write", path: path, code: errno) }
            done += n
        }
    }
}
