// The second pass of a restore, for the tree: re-creates each directory, file, symbolic
// and hard link of a (checked) backup under a mounted new device's sandbox, through the
// mount, so the filesystem itself gives every file its class, key and name sealing.
// A file is made with its class before its first byte, so no byte is ever sealed under
// another class; modes and times are set once content is written, and a directory's
// only after its children (a read-only directory is filled first, its time is not moved
// by them). A failure is thrown as a SystemError that names the path in the sandbox.
import DataProtection
import DPFSProtocol
import CLinux
import Glibc
import SystemCalls

public final class SandboxExtractor {
    private let root: String
    private var directories: [(path: [UInt8], mode: mode_t, times: [timespec])] = []
    /// The directory of the last record's parent path, open: the next record is most
    /// often beside it.
    private var parent: (path: [UInt8], fd: Int32)?
    /// Called after each piece written; what it throws (an interruption) ends the restore.
    public var progress: (() throws -> Void)?

    public init(root: String) { self.root = root }

    deinit { if let parent { close(parent.fd) } }

    /// A path as a failure names it: in the sandbox, for the mount is the restore's own
    /// and temporary, not a place the user knows.
    private func display(_ path: [UInt8]) -> String { path.isEmpty ? "the sandbox's root" : String(decoding: path, as: UTF8.self) }

    /// The directory at `path`, opened one name at a time from the sandbox root, so that
    /// no path the kernel is given passes PATH_MAX however deep the tree a backup holds
    /// (a full path of a deep tree did, and the restore failed). The caller closes it.
    private func openDirectory(_ path: [UInt8]) throws -> Int32 {
        var fd = root.withCString { open($0, OpenFlag.path | O_DIRECTORY | O_CLOEXEC) }
        guard fd >= 0 else { throw SystemError("open", display([])) }
        guard !path.isEmpty else { return fd }
        for name in path.split(separator: UInt8(ascii: "/")) {
            let next = Array(name).withCString { openat(fd, $0, OpenFlag.path | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC) }
            let code = errno
            close(fd)
            guard next >= 0 else { throw SystemError("open", display(path), code: code) }
            fd = next
        }
        return fd
    }

    /// The open directory `path`'s last name is in, and that name.
    private func place(_ path: [UInt8]) throws -> (directory: Int32, name: [UInt8]) {
        let parentPath = SandboxPath.parent(path) ?? []
        let name = Array(path[(path.lastIndex(of: UInt8(ascii: "/")).map { $0 + 1 } ?? 0)...])
        if let parent, parent.path == parentPath { return (parent.fd, name) }
        let fd = try openDirectory(parentPath)
        if let parent { close(parent.fd) }
        parent = (parentPath, fd)
        return (fd, name)
    }

    /// Applies one tree record (checked by BackupCheck); a file's content is read from `stream`.
    public func apply(_ record: BackupRecord, content stream: OpeningStream) throws {
        guard let path = record.fields["path"] else { throw BackupError.damaged("a record has no path") }
        switch record.kind {
        case .directory:
            if path.isEmpty {
                try setDirectoryClass(record, path)
            } else {
                let (directory, name) = try place(path)
                let rc = name.withCString { mkdirat(directory, $0, 0o700) }
                // The layout directories (Documents, Library, …) are there already.
                guard rc == 0 || errno == EEXIST else { throw SystemError("mkdir", display(path)) }
                try setDirectoryClass(record, path)
            }
            directories.append((path, mode(record), times(record)))
        case .file:
            let (directory, name) = try place(path)
            let fd = name.withCString { openat(directory, $0, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600) }
            guard fd >= 0 else { throw SystemError("create", display(path)) }
            let whole: Bool
            do {
                try setClass(record, fd, path)
                whole = try writeContent(fd, path, from: stream)
            } catch {
                close(fd)
                throw error
            }
            guard close(fd) == 0 else { throw SystemError("close", display(path)) }
            guard whole else {
                // Left out of the backup (damaged): what came of it goes.
                guard name.withCString({ unlinkat(directory, $0, 0) }) == 0 else {
                    throw SystemError("remove", display(path))
                }
                return
            }
            try finish(path, mode: mode(record), times: times(record))
        case .symlink:
            guard let link = record.fields["target"] else { throw BackupError.damaged("a symbolic link has no target") }
            let (directory, name) = try place(path)
            let rc = link.withCString { linkTarget in name.withCString { symlinkat(linkTarget, directory, $0) } }
            guard rc == 0 else { throw SystemError("symlink", display(path)) }
            try setTimes(path, times(record))
        case .hardLink:
            guard let first = record.fields["target"] else { throw BackupError.damaged("a hard link has no target") }
            let firstDirectory = try openDirectory(SandboxPath.parent(first) ?? [])
            defer { close(firstDirectory) }
            let firstName = Array(first[(first.lastIndex(of: UInt8(ascii: "/")).map { $0 + 1 } ?? 0)...])
            let (directory, name) = try place(path)
            let rc = firstName.withCString { existing in name.withCString { linkat(firstDirectory, existing, directory, $0, 0) } }
            guard rc == 0 else { throw SystemError("link", display(path)) }
        default:
            throw BackupError.damaged("a tree record of kind \(record.kind) is not a tree record")
        }
    }

    /// Gives every directory its mode and times, deepest first.
    public func finishDirectories() throws {
        for directory in directories.reversed() {
            try finish(directory.path, mode: directory.mode, times: directory.times)
        }
        directories = []
    }

    private func mode(_ record: BackupRecord) -> mode_t { mode_t(record.integer("mode") ?? 0o600) }

    private func times(_ record: BackupRecord) -> [timespec] {
        let mtime = RecordTime.decode(record.fields["mtime"]) ?? timespec(tv_sec: 0, tv_nsec: (1 << 30) - 1)
        let atime = RecordTime.decode(record.fields["atime"]) ?? mtime
        return [atime, mtime]
    }

    private func setClass(_ record: BackupRecord, _ fd: Int32, _ path: [UInt8]) throws {
        guard let name = record.fields["class"] else { return }
        let rc = fsetxattr(fd, MountAttributes.protection, name, name.count, 0)
        guard rc == 0 else { throw SystemError("set the protection class of", display(path)) }
    }

    private func setDirectoryClass(_ record: BackupRecord, _ path: [UInt8]) throws {
        guard record.fields["class"] != nil else { return }
        let fd = try openDirectory(path)
        defer { close(fd) }
        // An O_PATH descriptor takes no attribute: the directory, opened for reading.
        let readable = openat(fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard readable >= 0 else { throw SystemError("open", display(path)) }
        defer { close(readable) }
        try setClass(record, readable, path)
    }

    private func finish(_ path: [UInt8], mode: mode_t, times: [timespec]) throws {
        if path.isEmpty {
            guard root.withCString({ chmod($0, mode) }) == 0 else { throw SystemError("chmod", display(path)) }
        } else {
            let (directory, name) = try place(path)
            guard name.withCString({ fchmodat(directory, $0, mode, 0) }) == 0 else {
                throw SystemError("chmod", display(path))
            }
        }
        try setTimes(path, times)
    }

    private func setTimes(_ path: [UInt8], _ times: [timespec]) throws {
        let rc: Int32
        if path.isEmpty {
            rc = root.withCString { utimensat(AT_FDCWD, $0, times, AT_SYMLINK_NOFOLLOW) }
        } else {
            let (directory, name) = try place(path)
            rc = name.withCString { utimensat(directory, $0, times, AT_SYMLINK_NOFOLLOW) }
        }
        guard rc == 0 else { throw SystemError("set the times of", display(path)) }
    }

    /// Writes a file's content into the new file open at `fd`: a hole is skipped over,
    /// never written, and the size set at the end, so that a file ending in a hole
    /// keeps its size. False when the content is abandoned (the file is left out).
    private func writeContent(_ fd: Int32, _ path: [UInt8], from stream: OpeningStream) throws -> Bool {
        var position: off_t = 0
        var endsInHole = false
        let whole = try stream.readFileContent { part in
            switch part {
            case .bytes(let piece):
                do throws(Errno) {
                    try pwriteAll(fd, piece, at: Int(position))
                } catch {
                    throw SystemError("write", display(path), code: error.rawValue)
                }
                position += off_t(piece.count)
                endsInHole = false
            case .hole(let length):
                position += off_t(length)
                endsInHole = true
            }
            try progress?()
        }
        if whole && endsInHole {
            guard ftruncate(fd, position) == 0 else { throw SystemError("write", display(path)) }
        }
        return whole
    }
}
