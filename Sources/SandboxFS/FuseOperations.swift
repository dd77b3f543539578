// The libfuse operation table. Each callback is a C function pointer that captures
// nothing: it finds the filesystem through fuse_get_context()->private_data and
// forwards to it. Built in a nonisolated function of its own so no callback can reach
// main-actor state.
import BlockStore
import CFuse
import Glibc

@inline(__always)
private func fs() -> SandboxFileSystem {
    // private_data is set by fuse_new to the retained filesystem for the mount's life.
    let raw = fuse_get_context().pointee.private_data
    return Unmanaged<SandboxFileSystem>.fromOpaque(UnsafeRawPointer(raw.unsafelyUnwrapped)).takeUnretainedValue()
}

func makeOperations() -> fuse_operations {
    var ops = fuse_operations()
    ops.`init` = { conn, config in
        configure(conn, config)
        return fuse_get_context().pointee.private_data
    }
    ops.getattr = { path, st, fi in st.map { fs().getattr(path, $0, fi) } ?? -EINVAL }
    ops.readlink = { path, buffer, size in
        guard let path, let buffer else { return -EINVAL }
        return fs().readlink(path, buffer, size)
    }
    ops.mknod = { path, mode, rdev in path.map { fs().mknod($0, mode, rdev) } ?? -EINVAL }
    ops.mkdir = { path, mode in path.map { fs().mkdir($0, mode) } ?? -EINVAL }
    ops.unlink = { path in path.map { fs().unlink($0) } ?? -EINVAL }
    ops.rmdir = { path in path.map { fs().rmdir($0) } ?? -EINVAL }
    ops.symlink = { target, path in
        guard let target, let path else { return -EINVAL }
        return fs().symlink(target, path)
    }
    ops.rename = { from, to, flags in
        guard let from, let to else { return -EINVAL }
        return fs().rename(from, to, flags)
    }
    ops.link = { from, to in
        guard let from, let to else { return -EINVAL }
        return fs().link(from, to)
    }
    ops.chmod = { path, mode, fi in fs().chmod(path, mode, fi) }
    ops.chown = { path, uid, gid, fi in fs().chown(path, uid, gid, fi) }
    ops.truncate = { path, size, fi in fs().truncate(path, size, fi) }
    ops.open = { path, fi in
        guard let path, let fi else { return -EINVAL }
        return fs().open(path, fi)
    }
    ops.read = { _, buffer, size, offset, fi in
        guard let buffer else { return -EINVAL }
        return fs().read(buffer, size, offset, fi)
    }
    ops.write = { _, data, size, offset, fi in
        guard let data else { return -EINVAL }
        return fs().write(data, size, offset, fi)
    }
    ops.write_buf = { _, bufv, offset, fi in
        guard let bufv else { return -EINVAL }
        return fs().writeBuffer(bufv, offset, fi)
    }
    ops.access = { path, mask in path.map { fs().access($0, mask) } ?? -EINVAL }
    ops.statfs = { _, st in st.map { fs().statfs($0) } ?? -EINVAL }
    // No flush: libfuse answers FLUSH with ENOSYS and the kernel stops sending it, one
    // round trip less per close (there is nothing to flush: writes go straight through).
    ops.release = { _, fi in fi.map { fs().release($0) } ?? 0 }
    ops.fsync = { _, dataOnly, fi in fs().fsync(dataOnly, fi) }
    ops.setxattr = { path, name, value, size, flags in
        guard let path, let name else { return -EINVAL }
        return fs().setxattr(path, name, value, size, flags)
    }
    ops.getxattr = { path, name, value, size in
        guard let path, let name else { return -EINVAL }
        return fs().getxattr(path, name, value, size)
    }
    ops.listxattr = { path, list, size in
        guard let path else { return -EINVAL }
        return fs().listxattr(path, list, size)
    }
    ops.removexattr = { path, name in
        guard let path, let name else { return -EINVAL }
        return fs().removexattr(path, name)
    }
    ops.opendir = { path, fi in
        guard let path, let fi else { return -EINVAL }
        return fs().opendir(path, fi)
    }
    ops.readdir = { _, buffer, filler, offset, fi, flags in fs().readdir(buffer, filler, offset, fi, flags) }
    ops.releasedir = { _, fi in fs().releasedir(fi) }
    ops.fsyncdir = { _, _, fi in fs().fsyncdir(fi) }
    ops.create = { path, mode, fi in
        guard let path, let fi else { return -EINVAL }
        return fs().create(path, mode, fi)
    }
    ops.utimens = { path, times, fi in fs().utimens(path, times, fi) }
    ops.fallocate = { _, mode, offset, length, fi in fs().fallocate(mode, offset, length, fi) }
    ops.lseek = { _, offset, whence, fi in fs().lseek(offset, whence, fi) }
    return ops
}

/// Negotiates the kernel connection: large requests, parallel directory operations,
/// stable inode numbers, and attribute caching short enough to stay honest.
private func configure(_ conn: UnsafeMutablePointer<fuse_conn_info>?, _ config: UnsafeMutablePointer<fuse_config>?) {
    if let config {
        config.pointee.use_ino = 1           // backing inode numbers: tar and hard links need them stable
        config.pointee.readdir_ino = 1
        config.pointee.nullpath_ok = 1       // I/O on unlinked open files goes by handle
        // An unlinked open file is renamed to a hidden name (kept in the orphan
        // directory, see BackingPaths.swift) so fstat and fchmod on it still work;
        // hard_remove would answer them ESTALE.
        config.pointee.hard_remove = 0
        // Keep a file's cached pages across opens only while its size and mtime are
        // unchanged, checked at every open: hard links are separate kernel inodes.
        config.pointee.auto_cache = 1
        config.pointee.ac_attr_timeout_set = 1
        config.pointee.ac_attr_timeout = 0
        config.pointee.entry_timeout = 1
        config.pointee.attr_timeout = 1
        config.pointee.negative_timeout = 1
    }
    if let conn {
        conn.pointee.max_write = 1 << 20
        // The kernel keeps the smaller of this and the mount's read_ahead_kb, which
        // MountSession raises to the same 4 MiB (the kernel starts a mount at 128 KiB).
        conn.pointee.max_readahead = UInt32(MountSession.readAheadKB * 1024)
        // Not FUSE_CAP_WRITEBACK_CACHE: measured here it made random 4 KiB writes 2.4×
        // faster, sequential writes no faster and extraction slower, and the kernel
        // would take writes to a complete file whose key is wiped into its page cache,
        // readable there and lost at writeback: against the lock guarantee.
        let wanted = UInt32(FUSE_CAP_PARALLEL_DIROPS) | UInt32(FUSE_CAP_ASYNC_READ)
            | UInt32(FUSE_CAP_READDIRPLUS) | UInt32(FUSE_CAP_READDIRPLUS_AUTO)
        conn.pointee.want |= wanted & conn.pointee.capable
    }
}
