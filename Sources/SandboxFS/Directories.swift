// Listing directories without a handle: the kernel opens directories itself (opendir
// answers ENOSYS once, and it sends no OPENDIR or RELEASEDIR after that; where it
// cannot, opendir gives fh 0), and each readdir opens the backing directory from the
// node's O_PATH descriptor, moves to the offset the kernel gives (a backing d_off,
// which ext4 keeps valid across opens) and reads with getdents64. Nothing is held
// between calls. The kernel keeps each listing (FOPEN_CACHE_DIR, kept across opens)
// and serves the next one itself until the directory changes: every change to a
// directory's entries comes through the kernel, which then drops its copy (nothing in
// the daemon adds, removes or renames a listed name behind it), and a lock refuses no
// listing.
// readdirplus hands the kernel an entry for each name, which counts one lookup as a
// lookup does (not for "." and ".."), except for a node the kernel holds as last told
// (KernelView.swift).
import BlockStore
import CFuse
import CLinux
import DataProtection
import Glibc
import SystemCalls

extension SandboxFileSystem {
    func opendir(_ req: fuse_req_t?, _ ino: fuse_ino_t, _ fi: UnsafeMutablePointer<fuse_file_info>) {
        if kernelOpensDirectories.load(ordering: .relaxed) { return reply(req, Errno(ENOSYS)) }
        fi.pointee.fh = 0
        fi.pointee.cache_readdir = 1
        fi.pointee.keep_cache = 1
        fuse_reply_open(req, fi)
    }

    func readdir(_ req: fuse_req_t?, _ ino: fuse_ino_t, _ size: Int, _ offset: off_t, plus: Bool) {
        let directory = node(ino)
        // A directory whose names cannot be read (record damaged, or reached by a name
        // that is not its own) lists as EIO, not as empty.
        do throws(Errno) { _ = try directoryID(directory) } catch { return reply(req, error) }
        let directoryFD: Int32
        do throws(Errno) {
            directoryFD = try directory.systemCall { openat($0, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC) }
        } catch {
            return reply(req, error)
        }
        defer { close(directoryFD) }
        if offset != 0 && Glibc.lseek(directoryFD, offset, SEEK_SET) < 0 { return reply(req, .current) }
        // The reply, then the backing entries: one allocation, as every malloc'd block
        // is filled twice (M_PERTURB).
        let room = max(size, 1)
        guard let memory = malloc(2 * room) else { return reply(req, Errno(ENOMEM)) }
        defer { free(memory) }
        let buffer = memory.assumingMemoryBound(to: CChar.self)
        let backingEntries = memory + room
        var used = 0
        // The entries whose lookups this listing counts (readdirplus).
        var counted: [Inode] = []
        listing: while true {
            let count = dpfs_getdents(directoryFD, backingEntries, room)
            if count < 0 && used == 0 { return reply(req, .current) }
            guard count > 0 else { break }
            var position = 0
            while position < count {
                let entry = (backingEntries + position).assumingMemoryBound(to: dpfs_dirent64.self)
                position += Int(entry.pointee.d_reclen)
                let backing = dpfs_dirent_name(entry).unsafelyUnwrapped
                switch addEntry(req, entry.pointee, backing, in: directory, directoryFD: directoryFD,
                                into: buffer + used, room: size - used, plus: plus, counted: &counted) {
                case .added(let bytes): used += bytes
                case .full: break listing  // the next call resumes at this entry
                case .failed(let error):
                    // Not left out of a listing the kernel keeps: the entries before it
                    // go now, and the next call, which starts at it, fails if it still fails.
                    if used == 0 { return reply(req, error) }
                    break listing
                }
            }
        }
        // The request was interrupted: the kernel never learns of the entries, so it
        // will send no forget for the lookups counted for them.
        if fuse_reply_buf(req, buffer, used) != 0 {
            for inode in counted { inodes.forget(inode, 1) }
        }
    }

    /// What adding one backing entry to a listing did.
    private enum Added {
        /// Its size in the reply, 0 if the name is not listed (reserved, undecipherable, gone).
        case added(Int)
        /// It does not fit in the room left.
        case full
        /// Its name or node could not be read now (descriptors or memory short).
        case failed(Errno)
    }

    /// Adds the entry for `backing` to a listing (to `counted` too, when it counts a lookup).
    private func addEntry(_ req: fuse_req_t?, _ entry: dpfs_dirent64, _ backing: UnsafePointer<CChar>,
                          in directory: Inode, directoryFD: Int32,
                          into buffer: UnsafeMutablePointer<CChar>, room: Int, plus: Bool,
                          counted: inout [Inode]) -> Added {
        let plain: [CChar], place: NamePlace?
        switch plaintextName(backing, in: directory, directoryFD: directoryFD) {
        case .hidden: return .added(0)
        case .unreadable(let error): return .failed(error)
        case .shown(let name, let at): (plain, place) = (name, at)
        }
        let next = off_t(entry.d_off)
        func fitted(_ needed: Int) -> Added { needed <= room ? .added(needed) : .full }
        return plain.withUnsafeBufferPointer { namePointer -> Added in
            let name = namePointer.baseAddress.unsafelyUnwrapped
            var st = stat()
            st.st_ino = ino_t(entry.d_ino)
            st.st_mode = mode_t(entry.d_type) << 12
            guard plus else { return fitted(fuse_add_direntry(req, buffer, room, name, &st, next)) }
            // Whether it fits before counting a lookup the kernel would never see.
            guard fuse_add_direntry_plus(req, nil, 0, name, nil, 0) <= room else { return .full }
            var parameters = fuse_entry_param()
            parameters.attr = st
            if !Self.isDotOrDotDot(name) {
                // A node the kernel holds as last told goes without its entry (nodeid 0:
                // the kernel keeps its own), and without a lookup to count.
                if let known = inodes.existing(InodeKey(device: directory.key.device, inode: UInt64(entry.d_ino))),
                   known.kernelView.isCurrent {
                    parameters.ino = 0
                    return .added(fuse_add_direntry_plus(req, buffer, room, name, &parameters, next))
                }
                let (inode, found): (Inode, stat)
                do throws(Errno) { (inode, found) = try listedEntry(directoryFD, backing) } catch {
                    return Self.isShortage(error) ? .failed(error) : .added(0)
                }
                reached(inode, by: place)
                counted.append(inode)
                parameters = entryParameters(inode, found)
            }
            return .added(fuse_add_direntry_plus(req, buffer, room, name, &parameters, next))
        }
    }

    /// The entry for a name readdirplus lists, one lookup counted: found by its backing
    /// inode when the kernel knows it already, else entered (no descriptor opened
    /// either way where a file handle names the node).
    func listedEntry(_ directoryFD: Int32, _ backing: UnsafePointer<CChar>) throws(Errno) -> (Inode, stat) {
        var st = stat()
        let birth = try statWithBirth(directoryFD, backing, &st)
        if let known = inodes.retainExisting(InodeKey(st)) {
            Self.presentSize(of: known, &st)
            return (known, st)
        }
        let inode = try entry(named: backing, in: directoryFD, &st, statted: true, birth: birth)
        Self.presentSize(of: inode, &st)
        return (inode, st)
    }

    static func isDotOrDotDot(_ name: UnsafePointer<CChar>) -> Bool {
        name[0] == 0x2e && (name[1] == 0 || (name[1] == 0x2e && name[2] == 0))
    }

    func fsyncdir(_ req: fuse_req_t?, _ ino: fuse_ino_t, _ dataOnly: Int32) {
        replying(req) { () throws(Errno) in
            let directory = node(ino)
            let fd = try directory.systemCall { openat($0, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC) }
            defer { close(fd) }
            try newFileSyncs.syncCreated(in: directory.key, directoryFD: fd)
            try Errno.check(dataOnly != 0 ? fdatasync(fd) : Glibc.fsync(fd))
        }
    }

    /// The object a handle's fh holds.
    @inline(__always)
    static func pointer(_ fh: UInt64) -> UnsafeRawPointer {
        UnsafeRawPointer(bitPattern: UInt(fh)).unsafelyUnwrapped
    }
}
