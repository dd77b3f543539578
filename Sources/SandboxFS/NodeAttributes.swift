// A node's attributes: getattr, setattr (mode, owner, size, times), readlink, access,
// statfs. With a handle, on the open descriptor; else on the node's O_PATH descriptor
// (fchownat with AT_EMPTY_PATH) or its /proc/self/fd path (chmod, utimensat).
import BlockStore
import CFuse
import CLinux
import DataProtection
import Glibc
import SystemCalls

extension SandboxFileSystem {
    func getattr(_ req: fuse_req_t?, _ ino: fuse_ino_t, _ fi: UnsafeMutablePointer<fuse_file_info>?) {
        replyAttributes(req, node(ino))
    }

    func setattr(_ req: fuse_req_t?, _ ino: fuse_ino_t, _ attr: UnsafeMutablePointer<stat>, _ toSet: Int32,
                 _ fi: UnsafeMutablePointer<fuse_file_info>?) {
        let inode = node(ino)
        let handle = Self.handle(fi)
        let caller = Caller(req)
        // The kernel names the handle only for a truncation; a chmod, chown or utimes
        // through an open descriptor comes without one.
        let open = handle?.file ?? inode.openFileWithoutDescriptor
        // A directory's mode and owner decide what files made there get: the spare made
        // there goes, before the change and once it is made, before the reply lets a
        // create in (SpareFiles).
        let inheritanceChanges = inode.isDirectory && toSet & (FUSE_SET_ATTR_MODE | FUSE_SET_ATTR_UID | FUSE_SET_ATTR_GID) != 0
        if inheritanceChanges { spares.discard() }
        if toSet & FUSE_SET_ATTR_MODE != 0 {
            let mode = attr.pointee.st_mode & 0o7777
            do throws(Errno) {
                if let open {
                    try Errno.check(fchmod(open.fd, mode))
                } else {
                    try systemCall(onPathOf: inode) { chmod($0, mode) }
                }
            } catch {
                return reply(req, error)
            }
            // After the change: a writer that checked before it must not count as clean.
            if mode & (S_ISUID | S_ISGID) != 0 { privileges.granted() }
            // The kernel drops its entry of a directory whose mode changed (access below
            // it may differ): the next listing of its parent gives it again, which spares
            // a LOOKUP on the way into it (each directory tar extracts gets a chmod).
            if inode.isDirectory { inode.kernelView.entryDropped() }
        }
        if toSet & (FUSE_SET_ATTR_UID | FUSE_SET_ATTR_GID) != 0 {
            let uid = toSet & FUSE_SET_ATTR_UID != 0 ? attr.pointee.st_uid : uid_t.max
            let gid = toSet & FUSE_SET_ATTR_GID != 0 ? attr.pointee.st_gid : gid_t.max
            do throws(Errno) {
                if let open {
                    try Errno.check(fchown(open.fd, uid, gid))
                } else {
                    try inode.systemCall { fchownat($0, "", uid, gid, AtFlag.emptyPath | AT_SYMLINK_NOFOLLOW) }
                }
            } catch {
                return reply(req, error)
            }
        }
        if inheritanceChanges { spares.discard() }
        if toSet & FUSE_SET_ATTR_SIZE != 0 {
            let size = attr.pointee.st_size
            guard size >= 0 else { return reply(req, .invalid) }
            guard inode.isRegular else { return reply(req, inode.isDirectory ? Errno(EISDIR) : .invalid) }
            do throws(Errno) {
                if let handle {
                    try resize(handle.file, inode, caller, to: Int(size))
                } else {
                    // Content changes need the file key, as on iOS: a locked file cannot be truncated.
                    let file = try retainFile(inode)
                    defer { inode.releaseOpen() }
                    try resize(file, inode, caller, to: Int(size))
                }
            } catch {
                return reply(req, error)
            }
        }
        if toSet & (FUSE_SET_ATTR_ATIME | FUSE_SET_ATTR_MTIME) != 0 {
            var times = [timespec(tv_sec: 0, tv_nsec: TimeSpecial.omit), timespec(tv_sec: 0, tv_nsec: TimeSpecial.omit)]
            if toSet & FUSE_SET_ATTR_ATIME_NOW != 0 {
                times[0].tv_nsec = TimeSpecial.now
            } else if toSet & FUSE_SET_ATTR_ATIME != 0 {
                times[0] = attr.pointee.st_atim
            }
            if toSet & FUSE_SET_ATTR_MTIME_NOW != 0 {
                times[1].tv_nsec = TimeSpecial.now
            } else if toSet & FUSE_SET_ATTR_MTIME != 0 {
                times[1] = attr.pointee.st_mtim
            }
            do throws(Errno) {
                if let open {
                    try Errno.check(futimens(open.fd, times))
                } else {
                    try systemCall(onPathOf: inode) { utimensat(AT_FDCWD, $0, times, 0) }
                }
            } catch {
                return reply(req, error)
            }
        }
        replyAttributes(req, inode)
    }

    /// Sets a file's plaintext size (a content change: EPERM without the key).
    func resize(_ file: OpenFile, _ inode: Inode, _ caller: Caller, to size: Int) throws(Errno) {
        dropPrivileges(file, inode, caller)
        try restoringKey(file, of: inode) { () throws(Errno) in
            try file.writing { () throws(Errno) in try BlockIO.resize(file.content, key: file.key, to: size, pool: pool) }
        }
    }

    func readlink(_ req: fuse_req_t?, _ ino: fuse_ino_t) {
        let inode = node(ino)
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        let n: Int
        do throws(Errno) { n = try inode.systemCall { readlinkat($0, "", &buffer, Int(PATH_MAX)) } } catch { return reply(req, error) }
        buffer[n] = 0
        // Targets are stored sealed (Names.swift); one that does not open is damage.
        guard let target = plaintextTarget(buffer) else { return reply(req, .io) }
        fuse_reply_readlink(req, target)
    }

    /// access(2) and chdir on a mount without default_permissions (MountSession): the
    /// answer the backing node gives the daemon, which is root, as the caller is. With
    /// default_permissions the kernel answers itself, from the mode and the ACL.
    func access(_ req: fuse_req_t?, _ ino: fuse_ino_t, _ mask: Int32) {
        let inode = node(ino)
        replying(req) { () throws(Errno) in
            try systemCall(onPathOf: inode) { faccessat(AT_FDCWD, $0, mask, AT_EACCESS) }
        }
    }

    func statfs(_ req: fuse_req_t?) {
        var st = statvfs()
        guard fstatvfs(rootFD, &st) == 0 else { return reply(req, .current) }
        fuse_reply_statfs(req, &st)
    }
}
