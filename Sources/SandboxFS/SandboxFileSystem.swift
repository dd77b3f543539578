// The sandbox as a filesystem: each FUSE path maps to the same relative path in the
// device's backing tree (names, modes, times and links are stored as they are; file
// contents are sealed). This file holds the state and the metadata operations;
// FileOperations.swift the data path, Attributes.swift the extended attributes.
import CFuse
import CLinux
import DataProtection
import Foundation
import Glibc
import Logging
import Synchronization

public final class SandboxFileSystem: @unchecked Sendable {
    // @unchecked: `fuse` is written once, before the loop starts serving requests.
    let rootFD: Int32
    let device: LockStateManager
    let files = OpenFileTable()
    let pool = BufferPool(size: (1 << 20) + 4 * BlockLayout.cipherBlockSize + 64 * 1024)
    let logger: Logger
    public let controlSocketPath: String
    /// Whether the daemon runs as root and so must give new files the caller's owner.
    let ownsForCallers = geteuid() == 0
    var fuse: OpaquePointer?

    public init(device: LockStateManager, controlSocketPath: String, logger: Logger) throws {
        let fd = Glibc.open(device.directory.sandboxPath, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { throw SystemError("open", device.directory.sandboxPath) }
        self.rootFD = fd
        self.device = device
        self.controlSocketPath = controlSocketPath
        self.logger = logger
        device.addRevoker { [unowned self] classes, reason in self.revoke(classes, reason: reason) }
    }

    /// "/Documents/a" → "Documents/a"; "/" → ".".
    @inline(__always)
    static func relative(_ path: UnsafePointer<CChar>) -> UnsafePointer<CChar> {
        path.pointee == 0x2f && path[1] == 0 ? dotPath : (path.pointee == 0x2f ? path + 1 : path)
    }

    nonisolated(unsafe) static let dotPath: UnsafePointer<CChar> = {
        let dot = UnsafeMutablePointer<CChar>.allocate(capacity: 2)
        dot[0] = 0x2e; dot[1] = 0
        return UnsafePointer(dot)
    }()

    @inline(__always) static func result(_ rc: Int32) -> Int32 { rc == 0 ? 0 : -errno }

    // MARK: Attributes

    func getattr(_ path: UnsafePointer<CChar>?, _ st: UnsafeMutablePointer<stat>, _ fi: UnsafeMutablePointer<fuse_file_info>?) -> Int32 {
        if let fi, fi.pointee.fh != 0, let handle = Self.handle(fi) {
            guard fstat(handle.file.fd, st) == 0 else { return -errno }
            st.pointee.st_size = handle.file.reading { handle.file.plainSize }
            return 0
        }
        guard let path else { return -ENOENT }
        guard fstatat(rootFD, Self.relative(path), st, AT_SYMLINK_NOFOLLOW) == 0 else { return -errno }
        Self.presentSize(st)
        return 0
    }

    /// Reports a regular file's plaintext size instead of its backing size.
    @inline(__always)
    static func presentSize(_ st: UnsafeMutablePointer<stat>) {
        if st.pointee.st_mode & S_IFMT == S_IFREG {
            st.pointee.st_size = off_t(BlockLayout.plainSize(backingSize: Int(st.pointee.st_size)))
        }
    }

    /// Gives a new node to the calling user, as a local filesystem does.
    func takeOwnership(_ relativePath: UnsafePointer<CChar>) {
        guard ownsForCallers, let context = fuse_get_context() else { return }
        fchownat(rootFD, relativePath, context.pointee.uid, context.pointee.gid, AT_SYMLINK_NOFOLLOW)
    }

    func readlink(_ path: UnsafePointer<CChar>, _ buffer: UnsafeMutablePointer<CChar>, _ size: Int) -> Int32 {
        let n = readlinkat(rootFD, Self.relative(path), buffer, size - 1)
        guard n >= 0 else { return -errno }
        buffer[n] = 0
        return 0
    }

    func mknod(_ path: UnsafePointer<CChar>, _ mode: mode_t, _ rdev: dev_t) -> Int32 {
        if mode & S_IFMT == S_IFREG {
            // A regular file made by mknod still needs a header and a key.
            switch createRegular(path, mode: mode) {
            case .failure(let rc): return rc.value
            case .success(let (fd, _, key)):
                key.wipe()
                close(fd)
                return 0
            }
        }
        guard mknodat(rootFD, Self.relative(path), mode, rdev) == 0 else { return -errno }
        takeOwnership(Self.relative(path))
        return 0
    }

    func mkdir(_ path: UnsafePointer<CChar>, _ mode: mode_t) -> Int32 {
        let relative = Self.relative(path)
        let inherited = directoryClass(parentOf: path)
        guard mkdirat(rootFD, relative, mode) == 0 else { return -errno }
        setDirectoryClass(relative, inherited)
        takeOwnership(relative)
        return 0
    }

    func unlink(_ path: UnsafePointer<CChar>) -> Int32 {
        Self.result(unlinkat(rootFD, Self.relative(path), 0))
    }

    func rmdir(_ path: UnsafePointer<CChar>) -> Int32 {
        Self.result(unlinkat(rootFD, Self.relative(path), AT_REMOVEDIR))
    }

    func symlink(_ target: UnsafePointer<CChar>, _ path: UnsafePointer<CChar>) -> Int32 {
        guard symlinkat(target, rootFD, Self.relative(path)) == 0 else { return -errno }
        takeOwnership(Self.relative(path))
        return 0
    }

    func rename(_ from: UnsafePointer<CChar>, _ to: UnsafePointer<CChar>, _ flags: UInt32) -> Int32 {
        guard renameat2(rootFD, Self.relative(from), rootFD, Self.relative(to), flags) == 0 else { return -errno }
        files.renamed(from: String(cString: from), to: String(cString: to))
        return 0
    }

    func link(_ from: UnsafePointer<CChar>, _ to: UnsafePointer<CChar>) -> Int32 {
        Self.result(linkat(rootFD, Self.relative(from), rootFD, Self.relative(to), 0))
    }

    func chmod(_ path: UnsafePointer<CChar>?, _ mode: mode_t, _ fi: UnsafeMutablePointer<fuse_file_info>?) -> Int32 {
        if let handle = Self.handle(fi) { return Self.result(fchmod(handle.file.fd, mode)) }
        guard let path else { return -ENOENT }
        return Self.result(fchmodat(rootFD, Self.relative(path), mode, 0))
    }

    func chown(_ path: UnsafePointer<CChar>?, _ uid: uid_t, _ gid: gid_t, _ fi: UnsafeMutablePointer<fuse_file_info>?) -> Int32 {
        if let handle = Self.handle(fi) { return Self.result(fchown(handle.file.fd, uid, gid)) }
        guard let path else { return -ENOENT }
        return Self.result(fchownat(rootFD, Self.relative(path), uid, gid, AT_SYMLINK_NOFOLLOW))
    }

    func utimens(_ path: UnsafePointer<CChar>?, _ times: UnsafePointer<timespec>?, _ fi: UnsafeMutablePointer<fuse_file_info>?) -> Int32 {
        if let handle = Self.handle(fi) { return Self.result(futimens(handle.file.fd, times)) }
        guard let path else { return -ENOENT }
        return Self.result(utimensat(rootFD, Self.relative(path), times, AT_SYMLINK_NOFOLLOW))
    }

    func statfs(_ st: UnsafeMutablePointer<statvfs>) -> Int32 {
        Self.result(fstatvfs(rootFD, st))
    }

    // MARK: Directories

    func opendir(_ path: UnsafePointer<CChar>, _ fi: UnsafeMutablePointer<fuse_file_info>) -> Int32 {
        let fd = openat(rootFD, Self.relative(path), O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { return -errno }
        guard let stream = fdopendir(fd) else { close(fd); return -errno }
        fi.pointee.fh = UInt64(UInt(bitPattern: stream) | Self.directoryTag)
        return 0
    }

    func readdir(_ buffer: UnsafeMutableRawPointer?, _ filler: fuse_fill_dir_t?, _ offset: off_t,
                 _ fi: UnsafeMutablePointer<fuse_file_info>?, _ flags: fuse_readdir_flags) -> Int32 {
        guard let fi, let stream = Self.directoryStream(fi), let filler else { return -EBADF }
        let plus = flags.rawValue & FUSE_READDIR_PLUS.rawValue != 0
        let directoryFD = dirfd(stream)
        if offset == 0 { rewinddir(stream) } else { seekdir(stream, Int(offset)) }
        var st = stat()
        while true {
            errno = 0
            guard let entry = Glibc.readdir(stream) else { return errno == 0 ? 0 : -errno }
            let full = withUnsafePointer(to: &entry.pointee.d_name) { namePointer -> Int32 in
                namePointer.withMemoryRebound(to: CChar.self, capacity: 256) { name -> Int32 in
                    var fillFlags = fuse_fill_dir_flags(0)
                    if plus, fstatat(directoryFD, name, &st, AT_SYMLINK_NOFOLLOW) == 0 {
                        Self.presentSize(&st)
                        fillFlags = FUSE_FILL_DIR_PLUS
                    } else {
                        st = stat()
                        st.st_ino = entry.pointee.d_ino
                        st.st_mode = mode_t(entry.pointee.d_type) << 12
                    }
                    return filler(buffer, name, &st, off_t(entry.pointee.d_off), fillFlags)
                }
            }
            if full != 0 { return 0 }
        }
    }

    func releasedir(_ fi: UnsafeMutablePointer<fuse_file_info>?) -> Int32 {
        if let fi, let stream = Self.directoryStream(fi) { closedir(stream) }
        return 0
    }

    func fsyncdir(_ fi: UnsafeMutablePointer<fuse_file_info>?) -> Int32 {
        guard let fi, let stream = Self.directoryStream(fi) else { return -EBADF }
        return Self.result(Glibc.fsync(dirfd(stream)))
    }

    // MARK: Directory classes

    static let protectionAttribute = MountAttributes.protection

    /// The class a directory passes to new children: its stored class, else the default.
    func directoryClass(_ relativePath: UnsafePointer<CChar>) -> ProtectionClass {
        var buffer = [CChar](repeating: 0, count: 64)
        let fd = openat(rootFD, relativePath, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW)
        guard fd >= 0 else { return device.defaultProtection }
        defer { close(fd) }
        let n = fgetxattr(fd, Self.protectionAttribute, &buffer, buffer.count - 1)
        guard n > 0 else { return device.defaultProtection }
        let name = String(decoding: buffer[0..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return ProtectionClass(name: name) ?? device.defaultProtection
    }

    func directoryClass(parentOf path: UnsafePointer<CChar>) -> ProtectionClass {
        let text = String(cString: path)
        guard let slash = text.lastIndex(of: "/"), slash != text.startIndex else { return directoryClass(Self.dotPath) }
        return String(text[text.index(after: text.startIndex)..<slash]).withCString { directoryClass($0) }
    }

    @discardableResult
    func setDirectoryClass(_ relativePath: UnsafePointer<CChar>, _ protectionClass: ProtectionClass) -> Int32 {
        let fd = openat(rootFD, relativePath, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW)
        guard fd >= 0 else { return -errno }
        defer { close(fd) }
        return protectionClass.name.withCString {
            Self.result(fsetxattr(fd, Self.protectionAttribute, $0, strlen($0), 0))
        }
    }

    /// Directory handles carry this bit in fi->fh, file handles never do (both are
    /// pointers to 16-byte aligned memory), so one can never be taken for the other.
    static let directoryTag: UInt = 1

    static func directoryStream(_ fi: UnsafeMutablePointer<fuse_file_info>) -> OpaquePointer? {
        let raw = UInt(fi.pointee.fh)
        guard raw & directoryTag != 0 else { return nil }
        return OpaquePointer(bitPattern: raw & ~directoryTag)
    }

    static func handle(_ fi: UnsafeMutablePointer<fuse_file_info>?) -> FileHandle? {
        guard let fi, fi.pointee.fh != 0, UInt(fi.pointee.fh) & directoryTag == 0, let raw = UnsafeRawPointer(bitPattern: UInt(fi.pointee.fh)) else { return nil }
        return Unmanaged<FileHandle>.fromOpaque(raw).takeUnretainedValue()
    }
}
