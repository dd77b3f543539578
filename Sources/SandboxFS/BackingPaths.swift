// Where a FUSE path lives in the backing tree. Normally at the same relative path
// under the sandbox, reached with one *at call from the sandbox's descriptor. Two
// cases need more:
//
// - libfuse's hidden names. hard_remove is off, so when an open file is unlinked or
//   renamed over, libfuse renames it to ".fuse_hidden<node><counter>" in the same
//   directory and unlinks that name at the last close; fstat, fchmod, futimens and
//   the like keep working on it, as on a local filesystem (with hard_remove on, libfuse
//   answers them with ESTALE). dpfs keeps every hidden file in one orphan directory,
//   sandbox/.fuse_hidden-orphans, so the user's directory is really empty (rmdir
//   works, nothing shows in a listing). Mounting empties it: nothing in it is open.
//   libfuse asks to unlink a hidden file at what it takes for the last close, but an
//   open of the same node may be in flight then (libfuse does not order the two), and
//   a close racing the rename that hides a file is never followed by that unlink; so
//   dpfs sweeps the orphans itself and removes each once no handle has had it open
//   for a few seconds (sweepOrphans). An unlinked file's space comes back that much
//   later than on a local disk.
//   Names beginning with ".fuse_hidden" are therefore libfuse's: making a node of
//   such a name, or renaming a directory (or anything to another form of it), gives
//   EPERM, and such names are never listed.
// - Paths of PATH_MAX bytes or more (deep trees): the parent directory is opened a
//   few components at a time, as a local filesystem serves a tree walked relatively.
import BlockStore
import CLinux
import Dispatch
import Glibc
import Synchronization


extension SandboxFileSystem {
    static let hiddenPrefix = ".fuse_hidden"
    static let orphanDirectoryName = ".fuse_hidden-orphans"

    /// The last component of a FUSE path (after the last slash).
    @inline(__always)
    static func lastComponent(_ path: UnsafePointer<CChar>) -> UnsafePointer<CChar> {
        guard let slash = strrchr(path, 0x2f) else { return path }
        return UnsafePointer(slash + 1)
    }

    /// Whether a name is one of libfuse's hidden names (or the orphan directory).
    @inline(__always)
    static func isHidden(_ name: UnsafePointer<CChar>) -> Bool {
        name.pointee == 0x2e && strncmp(name, hiddenPrefix, 12) == 0
    }

    /// Whether a new node may not take this path's name: libfuse's hidden names are
    /// made by rename only (EPERM for mkdir, create, mknod, symlink, link).
    @inline(__always)
    static func isReservedName(_ path: UnsafePointer<CChar>) -> Bool {
        isHidden(lastComponent(path))
    }

    /// Whether a rename may take this target name: any name but the hidden ones, and
    /// those only in libfuse's own form (".fuse_hidden" and 16 hex digits) for a node
    /// that is not a directory (libfuse hides open files only). Anything else there
    /// would be swept away as an orphan.
    func mayRename(_ from: UnsafePointer<CChar>, to: UnsafePointer<CChar>) -> Bool {
        let name = Self.lastComponent(to)
        guard Self.isHidden(name) else { return true }
        guard strlen(name) == 28 else { return false }
        for index in 12..<28 where isxdigit(Int32(UInt8(bitPattern: name[index]))) == 0 { return false }
        var st = stat()
        return at(from) { fstatat($0, $1, &st, AT_SYMLINK_NOFOLLOW) } == 0 && st.st_mode & S_IFMT != S_IFDIR
    }

    /// Runs `body` with the directory descriptor and name that reach `path` in the
    /// backing tree. A walk that fails midway falls back to the full relative path,
    /// which then fails as the kernel says (ENAMETOOLONG).
    func at<R>(_ path: UnsafePointer<CChar>, _ body: (Int32, UnsafePointer<CChar>) -> R) -> R {
        let name = Self.lastComponent(path)
        if Self.isHidden(name) {
            let orphans = orphanDirectory()
            if orphans >= 0 { return body(orphans, name) }
        }
        let relative = Self.relative(path)
        let length = strlen(relative)
        if length < Int(PATH_MAX) { return body(rootFD, relative) }
        guard let copy = strdup(relative) else { return body(rootFD, relative) }
        defer { free(copy) }
        var directory = rootFD
        var start = copy
        var remaining = length
        while remaining >= Int(PATH_MAX) {
            // The last slash that keeps this step under PATH_MAX.
            var cut = Int(PATH_MAX) - 2
            while cut > 0 && start[cut] != 0x2f { cut -= 1 }
            var next: Int32 = -1
            if cut > 0 {
                start[cut] = 0
                next = openat(directory, start, OpenFlag.path | O_DIRECTORY | O_CLOEXEC)
            }
            if directory != rootFD { close(directory) }
            guard next >= 0 else { return body(rootFD, relative) }
            directory = next
            start += cut + 1
            remaining -= cut + 1
        }
        defer { if directory != rootFD { close(directory) } }
        return body(directory, UnsafePointer(start))
    }

    /// Runs `body` with a path string naming the node itself, for the path-based
    /// xattr calls: the absolute backing path (`follow` false: use the l* calls), or,
    /// when that would be too long, /proc/self/fd/N of an OpenFlag.path descriptor of the node
    /// (`follow` true: the magic link resolves to the node, symlinks included).
    func withNodePath<R>(_ path: UnsafePointer<CChar>, _ body: (UnsafePointer<CChar>, Bool) -> R) -> R {
        let name = Self.lastComponent(path)
        if Self.isHidden(name), orphanDirectory() >= 0 {
            return (device.directory.sandboxPath + "/" + Self.orphanDirectoryName + "/" + String(cString: name))
                .withCString { body($0, false) }
        }
        let full = device.directory.sandboxPath + String(cString: path)
        if full.utf8.count < Int(PATH_MAX) { return full.withCString { body($0, false) } }
        let fd = at(path) { openat($0, $1, OpenFlag.path | O_NOFOLLOW | O_CLOEXEC) }
        guard fd >= 0 else { return full.withCString { body($0, false) } }
        defer { close(fd) }
        return "/proc/self/fd/\(fd)".withCString { body($0, true) }
    }

    /// The orphan directory's descriptor, made on first use; -1 if it cannot be made.
    func orphanDirectory() -> Int32 {
        orphans.withLock { fd in
            if fd >= 0 { return fd }
            if mkdirat(rootFD, Self.orphanDirectoryName, 0o700) != 0 && errno != EEXIST { return -1 }
            fd = openat(rootFD, Self.orphanDirectoryName, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW)
            return fd
        }
    }

    /// How long an orphan stays after its last handle closed.
    static let orphanGrace: Double = 3

    /// libfuse's unlink of a hidden name, at what it takes for the last close: the
    /// orphan goes at a later sweep, once closed and idle for the grace period.
    func removeOrphan(_ path: UnsafePointer<CChar>) -> Int32 {
        let orphans = orphanDirectory()
        guard orphans >= 0 else { return -ENOENT }
        var st = stat()
        guard fstatat(orphans, Self.lastComponent(path), &st, AT_SYMLINK_NOFOLLOW) == 0 else { return -errno }
        scheduleOrphanSweep()
        return 0
    }

    func scheduleOrphanSweep() {
        DispatchQueue.global(qos: .utility).asyncAfter(deadline: .now() + Self.orphanGrace + 0.1) { [weak self] in
            self?.sweepOrphans()
        }
    }

    /// Unlinks every orphan that no handle has had open for the grace period (libfuse
    /// may not ask: a close racing the rename that hid the file goes unnoticed), and
    /// sweeps again later while any remain.
    func sweepOrphans() {
        let orphans = orphanDirectory()
        guard orphans >= 0 else { return }
        guard let names = Self.entryNames(of: orphans) else { return }
        let now = Self.monotonicNow()
        let remaining = idleOrphans.withLock { idle -> Int in
            var left = 0
            var seen = Set<String>()
            for name in names {
                var st = stat()
                guard fstatat(orphans, name, &st, AT_SYMLINK_NOFOLLOW) == 0 else { continue }
                let inode = InodeKey(device: UInt64(st.st_dev), inode: UInt64(st.st_ino))
                seen.insert(name)
                left += 1
                if files.existing(inode) != nil {
                    idle[name] = nil
                } else if let since = idle[name], since.inode == inode {
                    if now - since.time >= Self.orphanGrace {
                        unlinkat(orphans, name, 0)
                        idle[name] = nil
                        left -= 1
                    }
                } else {
                    idle[name] = (inode, now)
                }
            }
            for name in idle.keys where !seen.contains(name) { idle[name] = nil }
            return left
        }
        if remaining > 0 { scheduleOrphanSweep() }
    }

    static func monotonicNow() -> Double {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return Double(now.tv_sec) + Double(now.tv_nsec) / 1e9
    }

    /// At mount: removes what a previous mount left in the orphan directory (files
    /// unlinked while open when the daemon stopped), then the directory itself.
    func removeStaleOrphans() {
        let fd = openat(rootFD, Self.orphanDirectoryName, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW)
        guard fd >= 0 else { return }
        defer { close(fd) }
        for name in Self.entryNames(of: fd) ?? [] { unlinkat(fd, name, 0) }
        unlinkat(rootFD, Self.orphanDirectoryName, AT_REMOVEDIR)
    }

    /// The names in the directory open as `directory` (without "." and ".."), read
    /// through a descriptor of its own so `directory` stays open; nil if unreadable.
    static func entryNames(of directory: Int32) -> [String]? {
        let listing = openat(directory, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard listing >= 0 else { return nil }
        guard let stream = fdopendir(listing) else { close(listing); return nil }
        defer { closedir(stream) }
        var names: [String] = []
        while let entry = Glibc.readdir(stream) {
            let name = withUnsafePointer(to: &entry.pointee.d_name) {
                $0.withMemoryRebound(to: CChar.self, capacity: 256) { String(cString: $0) }
            }
            if name != "." && name != ".." { names.append(name) }
        }
        return names
    }

    /// The FUSE path of the directory holding `path` ("/" for top-level names).
    static func parentPath(_ path: UnsafePointer<CChar>) -> String {
        let text = String(cString: path)
        guard let slash = text.lastIndex(of: "/"), slash != text.startIndex else { return "/" }
        return String(text[..<slash])
    }
}
