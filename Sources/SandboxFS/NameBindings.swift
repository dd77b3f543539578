// Name tags (NameBinding): each regular file and directory lists, in its backing
// `user.dpfs.names` attribute, a MAC of its identity and each name it has. A tag is
// written before the name it vouches for appears (create, mknod, mkdir, link, rename)
// and removed once that name is gone, so a crash leaves at most a tag too many, never
// a name without its tag: the attribute is metadata the backing filesystem journals
// in order with the directory entry. The names the kernel reaches a node by (lookup,
// readdirplus) are checked against its tags before its contents are used: at open for
// a file, at first use of its ID for a directory. One that is not listed is a node
// renamed in the backing tree over another's name: EIO.
import BlockStore
import CLinux
import DataProtection
import Glibc
import SystemCalls

extension SandboxFileSystem {
    /// Notes that the kernel reached `inode` by the name at `place`.
    func reached(_ inode: Inode, by place: NamePlace?) {
        guard let place, inode.isRegular || inode.isDirectory else { return }
        inode.places.withLock { $0.reached(place) }
    }

    /// Notes that `inode`'s tags hold the name at `place` (written by this daemon).
    func vouched(_ inode: Inode, for place: NamePlace?) {
        guard let place, inode.isRegular || inode.isDirectory else { return }
        inode.places.withLock { $0.vouched(place) }
    }

    /// Checks that every name the kernel reached `node` by is among its tags, read from
    /// the node's descriptor `fd` (O_PATH or open), or its own when nil: EIO for a
    /// foreign name, or the error that kept the tags from being read.
    func checkOwnNames(_ node: Inode, identity: [UInt8], fd: Int32? = nil) throws(Errno) {
        let pending = node.places.withLock { $0.pending }
        if pending.isEmpty { return }
        let tags: [[UInt8]]
        do throws(Errno) {
            if let fd {
                tags = try readNameTags(fd)
            } else {
                tags = try node.withDescriptor { (fd) throws(Errno) in try readNameTags(fd) }
            }
        } catch {
            guard Self.isShortage(error) else { throw refuseForeignName() }
            throw error
        }
        let unlisted = pending.filter { !NameBinding.lists(tags, identity: identity, place: $0, metadataKey: device.metadataKey) }
        try node.places.withLock { (places) throws(Errno) in
            // An unlisted name this node lost through the mount came from a lookup that
            // raced the rename or unlink: stale, dropped. Any other is foreign.
            guard unlisted.allSatisfy(places.departed.contains) else { throw refuseForeignName() }
            for place in pending {
                if unlisted.contains(place) { places.pending.removeAll { $0 == place } } else { places.vouched(place) }
            }
        }
    }

    private func refuseForeignName() -> Errno {
        logger.error("a node is reached by a name that is not its own (moved in the backing tree, or its name tags are damaged): EIO")
        return .io
    }

    /// Notes that the node `status` names lost the name at `place` through the mount.
    func departed(_ status: stat, from place: NamePlace?) {
        guard let place, let known = inodes.existing(InodeKey(status)) else { return }
        known.places.withLock { $0.left(place) }
    }

    /// The name tags stored on the node of descriptor `fd`: EIO when they are malformed
    /// or unreadable, EMFILE, ENFILE or ENOMEM when the process was short of them.
    func readNameTags(_ fd: Int32) throws(Errno) -> [[UInt8]] {
        let tags: [[UInt8]]?
        do throws(Errno) {
            do throws(Errno) {
                tags = try NameTagStore.read(descriptor: fd)
            } catch where error == .badDescriptor {
                tags = try withProcPath(fd) { (path) throws(Errno) in try NameTagStore.read(path) }
            }
        } catch {
            throw Self.isShortage(error) ? error : .io
        }
        guard let tags else { throw Errno.io }
        return tags
    }

    /// Adds the tag for `adding` and drops the one for `removing` on the node of
    /// descriptor `fd` whose identity is `identity` (EMLINK: too many names).
    func retag(_ fd: Int32, identity: [UInt8], adding: NamePlace?, removing: NamePlace?) throws(Errno) {
        guard adding != nil || removing != nil else { return }
        try nameTagChanges.withLock { (_) throws(Errno) in
            try retagLocked(fd, identity: identity, adding: adding, removing: removing)
        }
    }

    private func retagLocked(_ fd: Int32, identity: [UInt8], adding: NamePlace?, removing: NamePlace?) throws(Errno) {
        let tags = try readNameTags(fd)
        guard let updated = NameBinding.updated(tags, identity: identity, adding: adding, removing: removing,
                                                metadataKey: device.metadataKey) else { throw Errno(EMLINK) }
        try withProcPath(fd) { (path) throws(Errno) in
            do throws(Errno) {
                try NameTagStore.write(path, updated)
            } catch where error.rawValue == EACCES {
                // A daemon that is not root may not set attributes on a node its owner made
                // read-only (a user xattr needs write permission): it lends itself the owner's
                // write bit for the moment.
                var st = stat()
                guard stat(path, &st) == 0, st.st_uid == geteuid(), chmod(path, st.st_mode | S_IWUSR) == 0 else { throw error }
                defer { _ = chmod(path, st.st_mode & 0o7777) }
                try NameTagStore.write(path, updated)
            }
        }
    }

    /// A node's identity for its name tags: a file's ID from its header, a directory's
    /// from its class record; nil for other nodes (they carry no tags) or when unreadable.
    func identity(ofNode fd: Int32, type: mode_t) -> [UInt8]? {
        switch type {
        case S_IFREG:
            return (try? readHeader(ofNode: fd))?.fileID
        case S_IFDIR:
            return DirectoryClassRecord.read(at: procPath(fd), metadataKey: device.metadataKey)?.directoryID
        default:
            return nil
        }
    }

    /// The authenticated header of the regular file whose descriptor (O_PATH or open)
    /// is `fd`, read through a descriptor of its own.
    func readHeader(ofNode fd: Int32) throws(Errno) -> FileHeader {
        let file = try withProcPath(fd, Self.openForHeader)
        defer { close(file) }
        return try HeaderIO.read(file, metadataKey: device.metadataKey)
    }

    /// A read-only descriptor of the file at `path`, to read its header: with O_NOATIME
    /// where the caller may (reading metadata from the header is not reading the file).
    static func openForHeader(_ path: UnsafePointer<CChar>) throws(Errno) -> Int32 {
        do throws(Errno) {
            return try Errno.check(Glibc.open(path, O_RDONLY | O_CLOEXEC | OpenFlag.noAccessTime))
        } catch where error == .notPermitted {
            return try Errno.check(Glibc.open(path, O_RDONLY | O_CLOEXEC))
        }
    }

    /// The node `name` in `directoryFD` as a tagged node: its O_PATH descriptor (the
    /// caller closes it), identity and attributes; nil when there is none or it carries
    /// no tags (not a regular file or directory); EIO when its identity is unreadable,
    /// and why when it cannot be opened (EMFILE).
    func taggedNode(_ directoryFD: Int32, _ name: UnsafePointer<CChar>) throws(Errno) -> TaggedNode? {
        let fd = openat(directoryFD, name, OpenFlag.path | O_NOFOLLOW | O_CLOEXEC)
        // No such name: nothing to tag. Any other failure (EMFILE) leaves it unknown.
        guard fd >= 0 else {
            guard errno == ENOENT else { throw Errno.current }
            return nil
        }
        var st = stat()
        guard fstatat(fd, "", &st, AtFlag.emptyPath | AT_SYMLINK_NOFOLLOW) == 0,
              st.st_mode & S_IFMT == S_IFREG || st.st_mode & S_IFMT == S_IFDIR else {
            close(fd)
            return nil
        }
        guard let identity = identity(ofNode: fd, type: st.st_mode & S_IFMT) else {
            close(fd)
            throw Errno.io
        }
        return TaggedNode(fd: fd, identity: identity, status: st)
    }
}

/// A regular file or directory found by name, ready to have its tags changed.
struct TaggedNode {
    let fd: Int32
    let identity: [UInt8]
    let status: stat
}
