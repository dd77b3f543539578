// Listing directories: opendir opens the backing directory from the node's O_PATH
// descriptor; readdir and readdirplus fill the kernel's buffer from it, resuming at the
// offset the kernel gives (the backing d_off). readdirplus hands the kernel an entry
// for each name, which counts one lookup as a lookup does (not for "." and "..").
import BlockStore
import CFuse
import DataProtection
import Glibc

extension SandboxFileSystem {
    func opendir(_ req: fuse_req_t?, _ ino: fuse_ino_t, _ fi: UnsafeMutablePointer<fuse_file_info>) {
        let inode = node(ino)
        // A directory whose names cannot be read (record damaged, or reached by a name
        // that is not its own) lists as EIO, not as empty.
        guard directoryID(inode) != nil else { return reply(req, .io) }
        let fd = inode.withDescriptor { openat($0, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC) }
        guard fd >= 0 else { return reply(req, .current) }
        guard let stream = fdopendir(fd) else { let error = Errno.current; close(fd); return reply(req, error) }
        let handle = DirectoryHandle(stream: stream)
        fi.pointee.fh = UInt64(UInt(bitPattern: Unmanaged.passRetained(handle).toOpaque()))
        if fuse_reply_open(req, fi) != 0 { Unmanaged<DirectoryHandle>.fromOpaque(Self.pointer(fi.pointee.fh)).release() }
    }

    func readdir(_ req: fuse_req_t?, _ ino: fuse_ino_t, _ size: Int, _ offset: off_t,
                 _ fi: UnsafeMutablePointer<fuse_file_info>?, plus: Bool) {
        guard let fi, fi.pointee.fh != 0 else { return reply(req, .badDescriptor) }
        let directory = node(ino)
        let handle = Unmanaged<DirectoryHandle>.fromOpaque(Self.pointer(fi.pointee.fh)).takeUnretainedValue()
        let stream = handle.stream
        let directoryFD = dirfd(stream)
        guard let buffer = malloc(max(size, 1))?.assumingMemoryBound(to: CChar.self) else { return reply(req, Errno(ENOMEM)) }
        defer { free(buffer) }
        if offset == 0 { rewinddir(stream) } else { seekdir(stream, Int(offset)) }
        var used = 0
        while true {
            errno = 0
            guard let entry = Glibc.readdir(stream) else {
                if errno != 0 && used == 0 { return reply(req, .current) }
                break
            }
            let next = off_t(entry.pointee.d_off)
            let added = withUnsafePointer(to: &entry.pointee.d_name) { namePointer -> Int? in
                namePointer.withMemoryRebound(to: CChar.self, capacity: 256) { backing -> Int? in
                    guard let (plain, place) = plaintextName(backing, in: directory, directoryFD: directoryFD) else { return 0 }
                    return plain.withUnsafeBufferPointer { namePointer -> Int? in
                    let name = namePointer.baseAddress.unsafelyUnwrapped
                    let room = size - used
                    var st = stat()
                    st.st_ino = entry.pointee.d_ino
                    st.st_mode = mode_t(entry.pointee.d_type) << 12
                    guard plus else {
                        let needed = fuse_add_direntry(req, buffer + used, room, name, &st, next)
                        return needed <= room ? needed : nil
                    }
                    // Whether it fits before counting a lookup the kernel would never see.
                    guard fuse_add_direntry_plus(req, nil, 0, name, nil, 0) <= room else { return nil }
                    var parameters = fuse_entry_param()
                    parameters.attr = st
                    if !Self.isDotOrDotDot(name) {
                        guard case .success(let (inode, found)) = listedEntry(directoryFD, backing) else { return 0 }
                        reached(inode, by: place)
                        parameters = entryParameters(inode, found)
                    }
                    return fuse_add_direntry_plus(req, buffer + used, room, name, &parameters, next)
                    }
                }
            }
            guard let added else { break }  // full: the next call resumes at this entry
            used += added
        }
        fuse_reply_buf(req, buffer, used)
    }

    /// The entry for a name readdirplus lists, one lookup counted: found by its backing
    /// inode when the kernel knows it already (no descriptor opened), else entered.
    func listedEntry(_ directoryFD: Int32, _ backing: UnsafePointer<CChar>) -> Result<(Inode, stat), Errno> {
        var st = stat()
        guard fstatat(directoryFD, backing, &st, AT_SYMLINK_NOFOLLOW) == 0 else { return .failure(.current) }
        if let known = inodes.retainExisting(InodeKey(st)) {
            if known.isRegular, let file = known.openFile { st.st_size = off_t(file.reading { file.plainSize }) } else { Self.presentSize(&st) }
            return .success((known, st))
        }
        let fd = openat(directoryFD, backing, OpenFlag.path | O_NOFOLLOW | O_CLOEXEC)
        guard fd >= 0 else { return .failure(.current) }
        // The name may have moved meanwhile: the descriptor's own attributes count.
        guard fstatat(fd, "", &st, AtFlag.emptyPath | AT_SYMLINK_NOFOLLOW) == 0 else {
            let error = Errno.current
            close(fd)
            return .failure(error)
        }
        let inode = inodes.remember(fd: fd, st)
        Self.presentSize(&st)
        return .success((inode, st))
    }

    static func isDotOrDotDot(_ name: UnsafePointer<CChar>) -> Bool {
        name[0] == 0x2e && (name[1] == 0 || (name[1] == 0x2e && name[2] == 0))
    }

    func releasedir(_ req: fuse_req_t?, _ fi: UnsafeMutablePointer<fuse_file_info>?) {
        if let fi, fi.pointee.fh != 0 {
            Unmanaged<DirectoryHandle>.fromOpaque(Self.pointer(fi.pointee.fh)).release()
            fi.pointee.fh = 0
        }
        replyOK(req)
    }

    func fsyncdir(_ req: fuse_req_t?, _ dataOnly: Int32, _ fi: UnsafeMutablePointer<fuse_file_info>?) {
        guard let fi, fi.pointee.fh != 0 else { return reply(req, .badDescriptor) }
        let handle = Unmanaged<DirectoryHandle>.fromOpaque(Self.pointer(fi.pointee.fh)).takeUnretainedValue()
        let fd = dirfd(handle.stream)
        replyResult(req, dataOnly != 0 ? fdatasync(fd) : Glibc.fsync(fd))
    }

    /// The object a handle's fh holds.
    @inline(__always)
    static func pointer(_ fh: UInt64) -> UnsafeRawPointer {
        UnsafeRawPointer(bitPattern: UInt(fh)).unsafelyUnwrapped
    }
}
