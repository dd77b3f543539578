// libfuse's low-level operation table. Each callback is a C function pointer that
// captures nothing: it finds the filesystem through the request's userdata (the
// retained SandboxFileSystem given to fuse_session_new) and forwards to it; each
// handler answers its request exactly once. Built in a nonisolated function of its own
// so no callback can reach main-actor state.
//
// Not implemented, on purpose: flush (nothing to flush: writes go straight through;
// libfuse answers ENOSYS once and the kernel stops sending it), flock/getlk/setlk (the
// kernel keeps locks itself, per kernel inode, so exclusive across hard links),
// copy_file_range (the kernel falls back to read and write, which seal), tmpfile
// (libfuse 3.14 has no such operation).
import BlockStore
import CFuse
import Glibc
import SystemCalls

@inline(__always)
private func fs(_ req: fuse_req_t?) -> SandboxFileSystem {
    Unmanaged<SandboxFileSystem>.fromOpaque(UnsafeRawPointer(fuse_req_userdata(req)).unsafelyUnwrapped).takeUnretainedValue()
}

/// Answers a request whose pointer arguments libfuse left out (never in practice).
@inline(__always)
private func invalid(_ req: fuse_req_t?) { fuse_reply_err(req, EINVAL) }

func makeLowLevelOperations() -> fuse_lowlevel_ops {
    var ops = fuse_lowlevel_ops()
    ops.`init` = { userdata, conn in
        guard let userdata, let conn else { return }
        Unmanaged<SandboxFileSystem>.fromOpaque(userdata).takeUnretainedValue().configure(conn)
    }
    ops.lookup = { req, parent, name in
        guard let name else { return invalid(req) }
        fs(req).lookup(req, parent, name)
    }
    ops.forget = { req, ino, count in fs(req).forget(req, ino, count) }
    ops.forget_multi = { req, count, forgets in fs(req).forgetMulti(req, count, forgets) }
    ops.getattr = { req, ino, fi in fs(req).getattr(req, ino, fi) }
    ops.setattr = { req, ino, attr, toSet, fi in
        guard let attr else { return invalid(req) }
        fs(req).setattr(req, ino, attr, toSet, fi)
    }
    ops.readlink = { req, ino in fs(req).readlink(req, ino) }
    ops.mknod = { req, parent, name, mode, rdev in
        guard let name else { return invalid(req) }
        let filesystem = fs(req)
        filesystem.changing(parent)
        filesystem.mknod(req, parent, name, filesystem.creationMode(req, parent, mode), rdev)
    }
    ops.mkdir = { req, parent, name, mode in
        guard let name else { return invalid(req) }
        let filesystem = fs(req)
        filesystem.changing(parent)
        filesystem.mkdir(req, parent, name, filesystem.creationMode(req, parent, mode))
    }
    ops.unlink = { req, parent, name in
        guard let name else { return invalid(req) }
        let filesystem = fs(req)
        filesystem.changing(parent)
        filesystem.unlink(req, parent, name)
    }
    ops.rmdir = { req, parent, name in
        guard let name else { return invalid(req) }
        let filesystem = fs(req)
        filesystem.changing(parent)
        filesystem.rmdir(req, parent, name)
    }
    ops.symlink = { req, target, parent, name in
        guard let target, let name else { return invalid(req) }
        let filesystem = fs(req)
        filesystem.changing(parent)
        filesystem.symlink(req, target, parent, name)
    }
    ops.rename = { req, parent, name, newParent, newName, flags in
        guard let name, let newName else { return invalid(req) }
        let filesystem = fs(req)
        filesystem.changing(parent)
        filesystem.changing(newParent)
        filesystem.rename(req, parent, name, newParent, newName, flags)
    }
    ops.link = { req, ino, newParent, newName in
        guard let newName else { return invalid(req) }
        let filesystem = fs(req)
        filesystem.changing(ino)
        filesystem.changing(newParent)
        filesystem.link(req, ino, newParent, newName)
    }
    ops.open = { req, ino, fi in
        guard let fi else { return invalid(req) }
        fs(req).open(req, ino, fi)
    }
    ops.create = { req, parent, name, mode, fi in
        guard let name, let fi else { return invalid(req) }
        let filesystem = fs(req)
        filesystem.changing(parent)
        filesystem.create(req, parent, name, filesystem.creationMode(req, parent, mode), fi)
    }
    ops.read = { req, _, size, offset, fi in fs(req).read(req, size, offset, fi) }
    ops.write_buf = { req, ino, bufv, offset, fi in
        guard let bufv else { return invalid(req) }
        let filesystem = fs(req)
        filesystem.changing(ino)
        filesystem.writeBuffer(req, ino, bufv, offset, fi)
    }
    ops.release = { req, _, fi in fs(req).release(req, fi) }
    ops.fsync = { req, _, dataOnly, fi in fs(req).fsync(req, dataOnly, fi) }
    ops.opendir = { req, ino, fi in
        guard let fi else { return invalid(req) }
        fs(req).opendir(req, ino, fi)
    }
    ops.readdir = { req, ino, size, offset, _ in fs(req).readdir(req, ino, size, offset, plus: false) }
    ops.readdirplus = { req, ino, size, offset, _ in fs(req).readdir(req, ino, size, offset, plus: true) }
    ops.fsyncdir = { req, ino, dataOnly, _ in fs(req).fsyncdir(req, ino, dataOnly) }
    ops.statfs = { req, _ in fs(req).statfs(req) }
    ops.setxattr = { req, ino, name, value, size, flags in
        guard let name else { return invalid(req) }
        let filesystem = fs(req)
        filesystem.changing(ino)
        filesystem.setxattr(req, ino, name, value, size, flags)
    }
    ops.getxattr = { req, ino, name, size in
        guard let name else { return invalid(req) }
        fs(req).getxattr(req, ino, name, size)
    }
    ops.listxattr = { req, ino, size in fs(req).listxattr(req, ino, size) }
    ops.removexattr = { req, ino, name in
        guard let name else { return invalid(req) }
        let filesystem = fs(req)
        filesystem.changing(ino)
        filesystem.removexattr(req, ino, name)
    }
    ops.access = { req, ino, mask in fs(req).access(req, ino, mask) }
    ops.fallocate = { req, ino, mode, offset, length, fi in
        let filesystem = fs(req)
        filesystem.changing(ino)
        filesystem.fallocate(req, mode, offset, length, fi)
    }
    ops.lseek = { req, ino, offset, whence, fi in fs(req).lseek(req, ino, offset, whence, fi) }
    return ops
}

extension SandboxFileSystem {
    /// Negotiates the kernel connection: large requests, parallel directory operations,
    /// readdirplus, POSIX ACLs the kernel enforces and caches (PosixACL.swift).
    func configure(_ conn: UnsafeMutablePointer<fuse_conn_info>) {
        conn.pointee.max_write = 1 << 20
        // The kernel keeps the smaller of this and the mount's read_ahead_kb, which
        // MountSession raises to the same 4 MiB (the kernel starts a mount at 128 KiB).
        conn.pointee.max_readahead = UInt32(MountSession.readAheadKB * 1024)
        // Not FUSE_CAP_WRITEBACK_CACHE: measured here it made random 4 KiB writes 2.4×
        // faster, sequential writes no faster and extraction slower, and the kernel
        // would take writes to a complete file whose key is wiped into its page cache,
        // readable there and lost at writeback: against the lock guarantee.
        let wanted = UInt32(FUSE_CAP_PARALLEL_DIROPS) | UInt32(FUSE_CAP_ASYNC_READ) | UInt32(FUSE_CAP_READDIRPLUS)
        conn.pointee.want |= wanted & conn.pointee.capable
        // READDIRPLUS for every block of every listing, not only the first (libfuse's
        // default _AUTO): a walk that opens or removes what it listed (find | xargs
        // cat, rm -rf) then finds each entry in the kernel's cache instead of paying a
        // LOOKUP per name (377 of the 2,788 requests of reading the bench tree).
        conn.pointee.want &= ~UInt32(FUSE_CAP_READDIRPLUS_AUTO)
        // The kernel opens directories itself where it can, once opendir says ENOSYS:
        // no OPENDIR and no RELEASEDIR per directory listed (1,660 of the 3,354
        // requests of ls -lR on the bench tree), and it keeps listings across opens
        // (Directories.swift). A dead daemon's mount is then no longer told by an open
        // of its root failing, as fusermount3's auto_unmount would tell it; dpfs keeps
        // a dead mount in place, failing closed, anyway (DaemonWatch.swift).
        kernelOpensDirectories.store(conn.pointee.capable & UInt32(FUSE_CAP_NO_OPENDIR_SUPPORT) != 0,
                                     ordering: .relaxed)
        // The umask is applied here, not by the kernel: a node made under a default ACL
        // must get the mode ext4 gives it, which ignores the umask (PosixACL.swift).
        conn.pointee.want |= UInt32(FUSE_CAP_DONT_MASK) & conn.pointee.capable
        // POSIX ACLs the kernel enforces and caches per inode, where it checks
        // permissions (MountSession.needsKernelPermissionChecks). Not on a mount only
        // root reaches: the ACL would turn the checks on, and they cost a GETATTR of
        // the parent per create (its attributes go stale at each create in it: +10% of
        // the requests of an untar), for ACLs that bind no one there.
        if kernel.checksPermissions { conn.pointee.want |= UInt32(FUSE_CAP_POSIX_ACL) & conn.pointee.capable }
        // Uncached handles for writing only, where the kernel drops other opens' cached
        // pages of the range a direct write covers, so their readers (and mappings)
        // see it: FUSE 7.39, Linux 6.6 (coherence.sh checks it).
        writeOnlyHandlesUncached.store(conn.pointee.proto_minor >= 39, ordering: .relaxed)
    }

    // MARK: Replies (each request gets exactly one)

    @inline(__always)
    func reply(_ req: fuse_req_t?, _ error: Errno) { fuse_reply_err(req, error.rawValue) }

    @inline(__always)
    func replyOK(_ req: fuse_req_t?) { fuse_reply_err(req, 0) }

    /// Answers a request whose only reply is its status: 0 when `body` returns, its
    /// errno when it throws.
    @inline(__always)
    func replying(_ req: fuse_req_t?, _ body: () throws(Errno) -> Void) {
        do throws(Errno) { try body() } catch { return reply(req, error) }
        replyOK(req)
    }

    /// Notes a request that changes `ino`'s attributes in the kernel (KernelView).
    @inline(__always)
    func changing(_ ino: fuse_ino_t) { node(ino).kernelView.changed() }

    /// Answers a lookup-like request with `inode` (whose lookup the caller counted).
    func replyEntry(_ req: fuse_req_t?, _ inode: Inode, _ st: stat) {
        var entry = entryParameters(inode, st)
        // The request was interrupted: the kernel never learns of the entry, so it will
        // send no forget for the lookup counted for it.
        if fuse_reply_entry(req, &entry) != 0 { inodes.forget(inode, 1) }
    }

    func entryParameters(_ inode: Inode, _ st: stat) -> fuse_entry_param {
        inode.kernelView.toldEntry()
        var entry = fuse_entry_param()
        entry.ino = inode.nodeID
        entry.generation = inode.generation
        entry.attr = st
        entry.attr_timeout = Self.attributeTimeout
        entry.entry_timeout = Self.entryTimeout
        return entry
    }

    func replyAttributes(_ req: fuse_req_t?, _ inode: Inode) {
        var st: stat
        do throws(Errno) { st = try attributes(inode) } catch { return reply(req, error) }
        inode.kernelView.toldAttributes()
        fuse_reply_attr(req, &st, Self.attributeTimeout)
    }
}
