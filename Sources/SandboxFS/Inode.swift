// One backing inode as the kernel knows it: one entry per (st_dev, st_ino), whatever
// its names, so every hard link is the same kernel inode (one link count, one page
// cache, one set of locks). The entry holds an O_PATH descriptor of the node, which
// every operation on it starts from (a *at() call, or /proc/self/fd/N), and which
// keeps the backing inode alive (so its number cannot be reused) until the kernel
// forgets the entry.
import BlockStore
import CFuse
import DataProtection
import Glibc
import Synchronization

struct InodeKey: Hashable, Sendable {
    let device: UInt64
    let inode: UInt64

    init(_ st: stat) {
        device = UInt64(st.st_dev)
        inode = UInt64(st.st_ino)
    }
}

final class Inode: @unchecked Sendable {
    // @unchecked: `lookups` is guarded by InodeTable's mutex, the open-file state by
    // `open`; everything else is immutable.
    /// An O_PATH descriptor of the node, owned by the entry.
    let fd: Int32
    let key: InodeKey
    /// The node's type (S_IFMT bits): fixed for an inode's life.
    let type: mode_t
    /// Distinguishes this entry from an earlier one the kernel knew by the same node id.
    let generation: UInt64
    /// The kernel's node id: 1 for the root, else this object's address (valid while
    /// the table holds it, that is until the kernel forgets it).
    private(set) var nodeID: fuse_ino_t = 0
    /// How many lookups the kernel has not forgotten yet (InodeTable's mutex).
    var lookups: UInt64 = 0
    /// The open-file state, shared by every handle and every name.
    let open = Mutex(OpenState())
    /// A directory's random ID, read from its class record on first use: its names
    /// are sealed under it (Names.swift). Fixed for the directory's life.
    let directoryID = Mutex<[UInt8]?>(nil)

    struct OpenState {
        var file: OpenFile?
        var handles = 0
        /// A lockable class this file had while open since the last lock: the kernel
        /// may hold its pages, which a lock of that class must drop.
        var cachedClass: ProtectionClass?
    }

    init(fd: Int32, key: InodeKey, type: mode_t, generation: UInt64, isRoot: Bool = false) {
        self.fd = fd
        self.key = key
        self.type = type
        self.generation = generation
        nodeID = isRoot ? fuse_ino_t(FUSE_ROOT_ID) : fuse_ino_t(UInt(bitPattern: Unmanaged.passUnretained(self).toOpaque()))
    }

    deinit { close(fd) }

    var isRegular: Bool { type == S_IFREG }
    var isDirectory: Bool { type == S_IFDIR }

    /// The node's attributes, straight from the backing node (sizes are backing sizes).
    func backingStat() -> Result<stat, Errno> {
        var st = stat()
        guard fstatat(fd, "", &st, AtFlag.emptyPath | AT_SYMLINK_NOFOLLOW) == 0 else { return .failure(.current) }
        return .success(st)
    }

    /// The open-file entry, if a handle holds one.
    var openFile: OpenFile? { open.withLock { $0.file } }

    /// Counts one more handle on the open-file entry, making it with `make` (outside
    /// the lock: it reads the header) when there is none.
    func retainOpen(_ make: () -> Result<OpenFile, Errno>) -> Result<OpenFile, Errno> {
        if let file = open.withLock({ state -> OpenFile? in
            guard let file = state.file else { return nil }
            state.handles += 1
            if file.protectionClass != .none { state.cachedClass = file.protectionClass }
            return file
        }) { return .success(file) }
        switch make() {
        case .failure(let error): return .failure(error)
        case .success(let fresh):
            // A racing open may have made one meanwhile: use it, drop ours.
            return .success(open.withLock { state -> OpenFile in
                let file = state.file ?? fresh
                state.file = file
                state.handles += 1
                if file.protectionClass != .none { state.cachedClass = file.protectionClass }
                return file
            })
        }
    }

    /// One handle less; the last drops the entry and with it the file key.
    func releaseOpen() {
        let dropped = open.withLock { state -> OpenFile? in
            state.handles -= 1
            guard state.handles <= 0 else { return nil }
            state.handles = 0
            defer { state.file = nil }
            return state.file
        }
        _ = dropped  // released here, outside the lock
    }

    /// Notes a class the kernel may cache pages of (a class change while open).
    func noteCachedClass(_ protectionClass: ProtectionClass) {
        guard protectionClass != .none else { return }
        open.withLock { $0.cachedClass = protectionClass }
    }
}
