// The sandbox as a filesystem: each FUSE path maps to the same relative path in the
// device's backing tree (names, modes, times and links are stored as they are; file
// contents are sealed). This file holds the state and the metadata operations;
// FileOperations.swift the data path, Attributes.swift the extended attributes,
// DirectoryClasses.swift the class a directory passes on.
import BlockStore
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
    let daemonUID = geteuid()
    let daemonGID = getegid()
    var ownsForCallers: Bool { daemonUID == 0 }
    var fuse: OpaquePointer?
    /// The orphan directory for libfuse's hidden files, opened on first use (BackingPaths.swift).
    let orphans = Mutex<Int32>(-1)
    /// Orphans no handle has open, by name, and since when (BackingPaths.swift).
    let idleOrphans = Mutex<[String: (inode: InodeKey, time: Double)]>([:])
    /// Paths seen for regular files with more than one link, by inode: libfuse gives
    /// each name its own kernel inode, so a change through one name must invalidate
    /// the others' cached attributes (link counts) and pages.
    let linkedPaths = Mutex<[InodeKey: Set<String>]>([:])
    /// Counts grants of set-ID bits and file capabilities through the mount (Privileges.swift).
    let privilegeEpoch = Atomic<UInt64>(1)
    /// Frees removed files off the request's path (NodeReaper.swift), once started.
    let reaper = Mutex<NodeReaper?>(nil)

    public init(device: LockStateManager, controlSocketPath: String, logger: Logger) throws {
        let fd = Glibc.open(device.directory.sandboxPath, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { throw SystemError("open", device.directory.sandboxPath) }
        self.rootFD = fd
        self.device = device
        self.controlSocketPath = controlSocketPath
        self.logger = logger
        removeStaleOrphans()
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
        guard at(path, { fstatat($0, $1, st, AT_SYMLINK_NOFOLLOW) }) == 0 else { return -errno }
        Self.presentSize(st)
        if st.pointee.st_nlink > 1 && st.pointee.st_mode & S_IFMT == S_IFREG { noteLinked(st.pointee, path) }
        return 0
    }

    /// Reports a regular file's plaintext size instead of its backing size.
    @inline(__always)
    static func presentSize(_ st: UnsafeMutablePointer<stat>) {
        if st.pointee.st_mode & S_IFMT == S_IFREG {
            st.pointee.st_size = off_t(BlockLayout.plainSize(backingSize: Int(st.pointee.st_size)))
        }
    }

    /// Gives a new node to the calling user, as a local filesystem does; in a setgid
    /// directory the node keeps the directory's group, which the backing node inherited.
    /// `mode` is the mode the node was created with, for a node that is not a directory
    /// or symlink: chown takes a non-directory's set-ID bits, which the caller asked for
    /// and the kernel let through (it strips a setgid bit the caller may not set).
    /// `fd`, when the node is open, is used instead of the name, which another process
    /// could have replaced meanwhile.
    func takeOwnership(_ path: UnsafePointer<CChar>, fd: Int32? = nil, mode: mode_t? = nil) {
        guard ownsForCallers, let context = fuse_get_context() else { return }
        // Made by the daemon's own user and group, the node is the caller's already (in
        // a setgid directory it has the directory's group, which it keeps either way).
        if context.pointee.uid == daemonUID && context.pointee.gid == daemonGID { return }
        var parent = stat()
        let setgid = Self.parentPath(path).withCString { parentPath in
            at(parentPath) { fstatat($0, $1, &parent, 0) } == 0 && parent.st_mode & S_ISGID != 0
        }
        let gid = setgid ? gid_t.max : context.pointee.gid
        let uid = context.pointee.uid
        if let fd {
            guard fchown(fd, uid, gid) == 0 else { return }
            if let mode, mode & (S_ISUID | S_ISGID) != 0 { _ = fchmod(fd, mode & 0o7777) }
        } else {
            guard at(path, { fchownat($0, $1, uid, gid, AT_SYMLINK_NOFOLLOW) }) == 0 else { return }
            if let mode, mode & (S_ISUID | S_ISGID) != 0 {
                _ = at(path) { fchmodat($0, $1, mode & 0o7777, AT_SYMLINK_NOFOLLOW) }
            }
        }
    }

    func readlink(_ path: UnsafePointer<CChar>, _ buffer: UnsafeMutablePointer<CChar>, _ size: Int) -> Int32 {
        let n = at(path) { readlinkat($0, $1, buffer, size - 1) }
        guard n >= 0 else { return -errno }
        buffer[n] = 0
        return 0
    }

    func mknod(_ path: UnsafePointer<CChar>, _ mode: mode_t, _ rdev: dev_t) -> Int32 {
        if Self.isReservedName(path) { return -EPERM }
        if mode & S_IFMT == S_IFREG {
            // A regular file made by mknod still needs a header and a key.
            switch createRegular(path, mode: mode) {
            case .failure(let rc): return rc.negated
            case .success(let (fd, _, key)):
                key.wipe()
                close(fd)
                return 0
            }
        }
        guard at(path, { mknodat($0, $1, mode, rdev) }) == 0 else { return -errno }
        takeOwnership(path, mode: mode)
        return 0
    }

    func mkdir(_ path: UnsafePointer<CChar>, _ mode: mode_t) -> Int32 {
        if Self.isReservedName(path) { return -EPERM }
        let inherited: ProtectionClass
        switch directoryClass(parentOf: path) {
        case .failure(let rc): return rc.negated
        case .success(let parentClass): inherited = parentClass
        }
        guard at(path, { mkdirat($0, $1, mode) }) == 0 else { return -errno }
        storeDirectoryClass(path, inherited, directoryID: DirectoryClassRecord.newDirectoryID())
        takeOwnership(path)
        return 0
    }

    func unlink(_ path: UnsafePointer<CChar>) -> Int32 {
        if Self.isReservedName(path) { return removeOrphan(path) }
        var st = stat()
        guard at(path, { fstatat($0, $1, &st, AT_SYMLINK_NOFOLLOW) }) == 0 else { return -errno }
        let type = st.st_mode & S_IFMT
        // A last link is freed by the reapers; a directory gets unlinkat's EISDIR.
        if st.st_nlink == 1 && type != S_IFDIR, let reaper = nodeReaper(), at(path, { reaper.remove($0, $1) }) {
            return 0
        }
        guard at(path, { unlinkat($0, $1, 0) }) == 0 else { return -errno }
        if st.st_nlink > 1 && type == S_IFREG { linkCountChanged(st, except: String(cString: path), removed: true) }
        return 0
    }

    /// The reapers of removed files, started at the first unlink (NodeReaper.swift).
    func nodeReaper() -> NodeReaper? {
        reaper.withLock { reaper in
            if let reaper { return reaper }
            let orphans = orphanDirectory()
            guard orphans >= 0 else { return nil }
            reaper = NodeReaper(orphans: orphans)
            return reaper
        }
    }

    /// Unlinks the removed files the reapers have not reached yet (at unmount).
    func finishRemovals() {
        reaper.withLock { $0 }?.drain()
    }

    func rmdir(_ path: UnsafePointer<CChar>) -> Int32 {
        Self.result(at(path) { unlinkat($0, $1, AT_REMOVEDIR) })
    }

    func symlink(_ target: UnsafePointer<CChar>, _ path: UnsafePointer<CChar>) -> Int32 {
        if Self.isReservedName(path) { return -EPERM }
        guard at(path, { symlinkat(target, $0, $1) }) == 0 else { return -errno }
        takeOwnership(path)
        return 0
    }

    func rename(_ from: UnsafePointer<CChar>, _ to: UnsafePointer<CChar>, _ flags: UInt32) -> Int32 {
        guard mayRename(from, to: to) else { return -EPERM }
        let rc = at(from) { fromDirectory, fromName in
            at(to) { renameat2(fromDirectory, fromName, $0, $1, flags) }
        }
        guard rc == 0 else { return -errno }
        files.renamed(from: String(cString: from), to: String(cString: to))
        if Self.isReservedName(to) { scheduleOrphanSweep() }  // libfuse hid an open file
        return 0
    }

    func link(_ from: UnsafePointer<CChar>, _ to: UnsafePointer<CChar>) -> Int32 {
        if Self.isReservedName(to) { return -EPERM }
        let rc = at(from) { fromDirectory, fromName in
            at(to) { linkat(fromDirectory, fromName, $0, $1, 0) }
        }
        guard rc == 0 else { return -errno }
        // The kernel knows the new name as a new inode: the old names' link counts are stale.
        var st = stat()
        if at(to, { fstatat($0, $1, &st, AT_SYMLINK_NOFOLLOW) }) == 0 && st.st_mode & S_IFMT == S_IFREG {
            noteLinked(st, from)
            linkCountChanged(st, except: String(cString: to), removed: false)
        }
        return 0
    }

    func chmod(_ path: UnsafePointer<CChar>?, _ mode: mode_t, _ fi: UnsafeMutablePointer<fuse_file_info>?) -> Int32 {
        let rc: Int32
        if let handle = Self.handle(fi) {
            rc = Self.result(fchmod(handle.file.fd, mode))
        } else {
            guard let path else { return -ENOENT }
            rc = Self.result(at(path) { fchmodat($0, $1, mode, 0) })
        }
        // After the change: a writer that checked before it must not count as clean.
        if rc == 0 && mode & (S_ISUID | S_ISGID) != 0 { notePrivilegeGranted() }
        return rc
    }

    func chown(_ path: UnsafePointer<CChar>?, _ uid: uid_t, _ gid: gid_t, _ fi: UnsafeMutablePointer<fuse_file_info>?) -> Int32 {
        if let handle = Self.handle(fi) { return Self.result(fchown(handle.file.fd, uid, gid)) }
        guard let path else { return -ENOENT }
        return Self.result(at(path) { fchownat($0, $1, uid, gid, AT_SYMLINK_NOFOLLOW) })
    }

    func utimens(_ path: UnsafePointer<CChar>?, _ times: UnsafePointer<timespec>?, _ fi: UnsafeMutablePointer<fuse_file_info>?) -> Int32 {
        if let handle = Self.handle(fi) { return Self.result(futimens(handle.file.fd, times)) }
        guard let path else { return -ENOENT }
        return Self.result(at(path) { utimensat($0, $1, times, AT_SYMLINK_NOFOLLOW) })
    }

    // MARK: Hard links

    func noteLinked(_ st: stat, _ path: UnsafePointer<CChar>) {
        let inode = InodeKey(device: UInt64(st.st_dev), inode: UInt64(st.st_ino))
        let text = String(cString: path)
        linkedPaths.withLock { table in
            if table.count > 4096 { table.removeAll() }  // hints only: forget rather than grow
            table[inode, default: []].insert(text)
        }
    }

    /// After a link or unlink of a multiply linked file: drops the cached attributes
    /// (and pages) of its other known names, so their link counts read true at once.
    func linkCountChanged(_ st: stat, except path: String, removed: Bool) {
        linkChanged(InodeKey(device: UInt64(st.st_dev), inode: UInt64(st.st_ino)), except: path, removed: removed)
    }

    func linkChanged(_ inode: InodeKey, except path: String, removed: Bool) {
        let others = linkedPaths.withLock { table -> Set<String> in
            if removed { table[inode]?.remove(path) }
            return (table[inode] ?? []).subtracting([path])
        }
        for other in others { invalidate(other) }
    }

    /// access(2) and chdir on a mount without default_permissions (MountSession): the
    /// answer the backing node gives the daemon, which is root, as the caller is.
    func access(_ path: UnsafePointer<CChar>, _ mask: Int32) -> Int32 {
        Self.result(at(path) { faccessat($0, $1, mask, AT_EACCESS) })
    }

    func statfs(_ st: UnsafeMutablePointer<statvfs>) -> Int32 {
        Self.result(fstatvfs(rootFD, st))
    }

    // MARK: Directories

    func opendir(_ path: UnsafePointer<CChar>, _ fi: UnsafeMutablePointer<fuse_file_info>) -> Int32 {
        let fd = at(path) { openat($0, $1, O_RDONLY | O_DIRECTORY | O_CLOEXEC) }
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
                    if Self.isHidden(name) { return 0 }  // libfuse's hidden files (BackingPaths.swift)
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
