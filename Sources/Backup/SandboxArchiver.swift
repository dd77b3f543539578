// Writes a mounted sandbox's tree into a backup: every directory, regular file and
// symbolic link with its relative path, mode, times and protection class (read through
// the mount's own attribute, so a file's class is what the filesystem says it is), a
// further name of a hard-linked file as a link to the first, and each file's bytes
// read through the mount: its data extents only (SEEK_DATA, SEEK_HOLE), its holes as
// holes, so that a sparse file (a VM image, a database) is stored at what it holds.
// tmp/ and Library/Caches/ keep their directory but not their contents, as in an iOS
// backup. Other node types (FIFOs, sockets, devices) are counted and left out, and so
// are entries removed while the backup runs. A file that fails to read (EIO: its
// backing copy is damaged) ends the backup, unless asked to leave such files out: then
// its content is marked abandoned and the file named in `damaged`. A failure is thrown
// as a SystemError; its code EPERM means a class key went away (the device locked
// during the backup).
import DataProtection
import DPFSProtocol
import CLinux
import Glibc
import SystemCalls

public final class SandboxArchiver {
    private let stream: SealingStream
    private let root: String
    /// A file's bytes pass through here (locked memory) on their way into the stream;
    /// as large as a piece, so a restore writes the mount's largest write (1 MiB) at once.
    private let scratch = SecureBuffer(count: BackupRecord.maxPieceSize)
    /// The first path of each file with several names, by inode number.
    private var firstNames: [UInt64: [UInt8]] = [:]
    public private(set) var records = 0
    public private(set) var files = 0
    public private(set) var skipped = 0
    /// Files, directories and links removed while the backup ran, between the listing
    /// of their directory and their own reading: left out, as files removed before it.
    public private(set) var vanished = 0
    /// Whether a file that fails to read with EIO is left out rather than ending the archive.
    public var skipDamaged = false
    /// The files left out for that, as the mount shows them.
    public private(set) var damaged: [String] = []
    /// Called after each piece and file; what it throws (an interruption) ends the archive.
    public var progress: (() throws -> Void)?

    /// Files never archived, by device and inode: the backup being written and the one
    /// it replaces, when they lie inside the sandbox, or the archive would read what it
    /// is writing and carry each earlier backup into the next.
    private let left: [(device: UInt64, inode: UInt64)]

    public init(root: String, into stream: SealingStream, leavingOut left: [(device: UInt64, inode: UInt64)] = []) {
        self.root = root
        self.stream = stream
        self.left = left
    }

    public func archive() throws {
        let fd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { throw SystemError("open", root) }
        defer { close(fd) }
        guard try directory([], fd: fd) else { throw SystemError("read", root, code: ENOENT) }
    }

    private func display(_ path: [UInt8]) -> String { root + "/" + String(decoding: path, as: UTF8.self) }

    /// Writes the directory open at `fd` and its tree; false when it was removed before
    /// its record was written (then nothing of it is).
    private func directory(_ path: [UInt8], fd: Int32) throws -> Bool {
        var info = stat()
        guard fstat(fd, &info) == 0 else { throw SystemError("stat", display(path)) }
        guard let protection = try protection(fd, path) else { return false }
        try write(.directory, path, info, protection: protection)
        if SandboxPath.contentsExcluded.contains(path) { return true }
        for name in try names(in: fd, path) {
            if try !child(name, in: fd, path) { vanished += 1 }
        }
        return true
    }

    /// Writes one entry of a directory; false when it was removed (ENOENT) since the
    /// directory was listed, before anything of it was written: it is left out, as if
    /// removed before the backup began. A file's name is recorded as the first of its
    /// inode only once its record is written, so that no link points at a vanished name.
    private func child(_ name: [UInt8], in fd: Int32, _ parent: [UInt8]) throws -> Bool {
        let path = SandboxPath.join(parent, name)
        var info = stat()
        guard name.withCString({ fstatat(fd, $0, &info, AT_SYMLINK_NOFOLLOW) }) == 0 else {
            if errno == ENOENT { return false }
            throw SystemError("stat", display(path))
        }
        if left.contains(where: { $0.device == UInt64(info.st_dev) && $0.inode == UInt64(info.st_ino) }) { return true }
        switch info.st_mode & S_IFMT {
        case S_IFDIR:
            let childFD = name.withCString { openat(fd, $0, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC) }
            guard childFD >= 0 else {
                if errno == ENOENT { return false }
                throw SystemError("open", display(path))
            }
            defer { close(childFD) }
            return try directory(path, fd: childFD)
        case S_IFREG:
            let inode = UInt64(info.st_ino)
            if info.st_nlink > 1, let first = firstNames[inode] {
                try stream.writeRecord(BackupRecord(.hardLink, ["path": path, "target": first]))
                records += 1
                return true
            }
            switch try file(path, name: name, in: fd, info) {
            case .vanished: return false
            case .written: if info.st_nlink > 1 { firstNames[inode] = path }
            case .damaged: break  // a further name is tried as a file of its own, and left out too
            }
            return true
        case S_IFLNK:
            return try symlink(path, name: name, in: fd, info)
        default:
            skipped += 1
            return true
        }
    }

    /// The names in a directory, sorted so that equal trees make equal record orders.
    private func names(in fd: Int32, _ path: [UInt8]) throws -> [[UInt8]] {
        let listing = dup(fd)
        guard listing >= 0, let stream = fdopendir(listing) else {
            throw SystemError("opendir", display(path))
        }
        defer { closedir(stream) }
        rewinddir(stream)
        var names: [[UInt8]] = []
        while true {
            errno = 0
            guard let entry = readdir(stream) else {
                // A directory removed since it was opened lists nothing (ENOENT): its
                // record is written already, and it ends up empty in the backup.
                if errno != 0 && errno != ENOENT { throw SystemError("readdir", display(path)) }
                break
            }
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in Array(raw.prefix { $0 != 0 }) }
            if name == [UInt8(ascii: ".")] || name == [UInt8(ascii: "."), UInt8(ascii: ".")] { continue }
            names.append(name)
        }
        return names.sorted { $0.lexicographicallyPrecedes($1) }
    }

    /// The class of the node open at `fd`; nil when the node was removed (ENOENT).
    private func protection(_ fd: Int32, _ path: [UInt8]) throws -> [UInt8]? {
        var buffer = [UInt8](repeating: 0, count: 64)
        let n = fgetxattr(fd, MountAttributes.protection, &buffer, buffer.count)
        guard n > 0 else {
            if n < 0 && errno == ENOENT { return nil }
            throw SystemError("read the protection class of", display(path))
        }
        return Array(buffer[0..<n])
    }

    private func write(_ kind: RecordKind, _ path: [UInt8], _ info: stat, protection: [UInt8]?,
                       extra: [String: [UInt8]] = [:]) throws {
        var fields = extra
        fields["path"] = path
        fields["mode"] = Array(String(info.st_mode & 0o7777).utf8)
        fields["mtime"] = RecordTime.encode(info.st_mtim)
        fields["atime"] = RecordTime.encode(info.st_atim)
        fields["class"] = protection
        try stream.writeRecord(BackupRecord(kind, fields))
        records += 1
    }

    private enum FileOutcome { case written, vanished, damaged }

    /// Writes a file's record and content: vanished when it was removed before its
    /// record, damaged when it was left out for failing to read (`skipDamaged`).
    private func file(_ path: [UInt8], name: [UInt8], in directory: Int32, _ info: stat) throws -> FileOutcome {
        let fd = name.withCString { openat(directory, $0, O_RDONLY | O_NOFOLLOW | O_CLOEXEC) }
        guard fd >= 0 else {
            if errno == ENOENT { return .vanished }
            if errno == EIO && skipDamaged {
                damaged.append(display(path))
                return .damaged
            }
            throw SystemError("open", display(path))
        }
        defer { close(fd) }
        let protection: [UInt8]
        do {
            guard let found = try self.protection(fd, path) else { return .vanished }
            protection = found
        } catch let failure as SystemError where failure.code == EIO && skipDamaged {
            damaged.append(display(path))
            return .damaged
        }
        try write(.file, path, info, protection: protection)
        do {
            try content(fd, path)
        } catch let failure as SystemError where failure.code == EIO && skipDamaged {
            try stream.abandonContent()
            damaged.append(display(path))
            try progress?()
            return .damaged
        }
        try stream.endContent()
        files += 1
        try progress?()
        return .written
    }

    /// Writes the content of the file open at `fd`: each data extent's bytes, and a
    /// hole before it and at the end where the file has one. A file or filesystem that
    /// cannot tell its holes (SEEK_DATA refused) is read whole.
    private func content(_ fd: Int32, _ path: [UInt8]) throws {
        var position: off_t = 0
        while true {
            let data = lseek(fd, position, SeekWhence.data)
            if data < 0 {
                if errno == ENXIO { break }  // no data after `position`: a hole to the end
                _ = try copy(fd, path, from: position, to: nil)
                return
            }
            let hole = lseek(fd, data, SeekWhence.hole)
            guard hole > data else {
                _ = try copy(fd, path, from: position, to: nil)
                return
            }
            try stream.writeHole(UInt64(data - position))
            position = try copy(fd, path, from: data, to: hole)
            if position < hole { return }  // cut short while it was read: the file ends there
        }
        let end = lseek(fd, 0, SEEK_END)
        guard end >= 0 else { throw SystemError("seek in", display(path)) }
        if end > position { try stream.writeHole(UInt64(end - position)) }
    }

    /// Copies the bytes from `start` up to `end` (nil: the end of the file) into the
    /// stream; where it stopped.
    private func copy(_ fd: Int32, _ path: [UInt8], from start: off_t, to end: off_t?) throws -> off_t {
        let buffer = scratch.mutableBytes
        var position = start
        while end.map({ position < $0 }) ?? true {
            let want = end.map { min(buffer.count, Int($0 - position)) } ?? buffer.count
            let n: Int
            do throws(Errno) {
                n = try preadAll(fd, UnsafeMutableRawBufferPointer(rebasing: buffer[0..<want]), at: Int(position))
            } catch {
                throw SystemError("read", display(path), code: error.rawValue)
            }
            if n == 0 { break }
            try stream.writePiece(UnsafeRawBufferPointer(rebasing: buffer[0..<n]))
            position += off_t(n)
            try progress?()
        }
        return position
    }

    /// Writes a link's record; false when it was removed before it could be read.
    private func symlink(_ path: [UInt8], name: [UInt8], in directory: Int32, _ info: stat) throws -> Bool {
        var target = [UInt8](repeating: 0, count: Int(PATH_MAX) + 1)
        let n = name.withCString { readlinkat(directory, $0, &target, target.count) }
        if n < 0 && errno == ENOENT { return false }
        guard n >= 0, n < target.count else { throw SystemError("readlink", display(path), code: n < 0 ? errno : ENAMETOOLONG) }
        try write(.symlink, path, info, protection: nil, extra: ["target": Array(target[0..<n])])
        return true
    }
}

extension [UInt8] {
    /// The bytes as a C string for a system call (no NUL inside: SandboxPath.isValid).
    func withCString<R>(_ body: (UnsafePointer<CChar>) throws -> R) rethrows -> R {
        let text = map { CChar(bitPattern: $0) } + [0]
        return try body(text)
    }
}
