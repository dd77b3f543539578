// One backing inode as the kernel knows it: one entry per (st_dev, st_ino), whatever
// its names, so every hard link is the same kernel inode (one link count, one page
// cache, one set of locks). Every operation on it starts from an O_PATH descriptor of
// the node (a *at() call, or /proc/self/fd/N), taken with `withDescriptor`, which pins
// it while in use. Where the backing filesystem makes file handles and the daemon may
// open them (root), the entry keeps the node's handle and its descriptor is open only
// while the inode is among the recently used (DescriptorCache), in use, or has open
// files; otherwise the entry keeps its descriptor until the kernel forgets it.
import BlockStore
import CFuse
import DataProtection
import Glibc
import Synchronization
import SystemCalls

struct InodeKey: Hashable, Sendable {
    let device: UInt64
    let inode: UInt64

    init(device: UInt64, inode: UInt64) {
        self.device = device
        self.inode = inode
    }

    init(_ st: stat) {
        device = UInt64(st.st_dev)
        inode = UInt64(st.st_ino)
    }
}

final class Inode: @unchecked Sendable {
    // @unchecked: `lookups` is guarded by InodeTable's mutex, the descriptor by
    // `descriptor`, the open-file state by `open`; everything else is immutable.
    let key: InodeKey
    /// The node's type (S_IFMT bits): fixed for an inode's life.
    let type: mode_t
    /// Distinguishes this entry from an earlier one the kernel knew by the same node id.
    let generation: UInt64
    /// Reopens the node when its descriptor was closed; nil: the descriptor stays open
    /// for the entry's life (no handles here, or the root).
    let handle: KernelFileHandle?
    /// Where a closed descriptor is reopened and open ones are counted (with `handle`).
    private let cache: DescriptorCache?
    /// When the backing inode was born, where the lookup that made the entry read it:
    /// with `handle`, what lets a later lookup take the handle again (DormantHandles).
    let birth: FileBirth?
    /// This daemon freed (or is freeing) the backing inode's number: its handle is not
    /// kept once the kernel forgets the entry.
    let freedThroughMount = Atomic<Bool>(false)
    /// The kernel's node id: 1 for the root, else this object's address (valid while
    /// the table holds it, that is until the kernel forgets it).
    private(set) var nodeID: fuse_ino_t = 0
    /// How many lookups the kernel has not forgotten yet (InodeTable's mutex).
    var lookups: UInt64 = 0
    /// The O_PATH descriptor and who uses it.
    private let descriptor: Mutex<Descriptor>
    /// The open-file state, shared by every handle and every name.
    let open = Mutex(OpenState())
    /// A directory's random ID, read from its class record on first use: its names
    /// are sealed under it (Names.swift). Fixed for the directory's life.
    let directoryID = Mutex<[UInt8]?>(nil)
    /// The last name sealed in this directory (Names.swift): a create's CREATE needs the
    /// backing form its LOOKUP made a moment before.
    let lastSealedName = Mutex<SealedName?>(nil)
    /// A directory's class record as last verified or written through the mount: a
    /// create reads it here instead of from the backing attribute. Dropped at every
    /// revocation, so a lock or restart reads (and verifies) it again.
    let classRecord = Mutex<DirectoryClassRecord.Decoded?>(nil)
    /// The names the kernel reached this node by, and which of them its name tags
    /// were checked for (NameBindings.swift).
    let places = Mutex(Places())
    /// The POSIX ACLs and file capability this node is known not to have
    /// (AbsentAttributes.swift).
    let absentAttributes = Atomic<UInt64>(0)
    /// What the kernel was last told of this node (readdirplus leaves out the current).
    let kernelView = KernelView()

    private struct Descriptor {
        /// -1 while closed (only with a handle).
        var fd: Int32
        /// Threads inside `withDescriptor` now: eviction waits for none.
        var users = 0
        /// Used since the cache's clock hand last passed.
        var referenced = true
        /// The kernel forgot the entry: the descriptor closes with its last user.
        var retired = false
    }

    struct OpenState {
        var file: OpenFile?
        var handles = 0
        /// Opens making the open-file entry now (outside the lock).
        var opening = 0
        /// Its data was cut away once it had no name and no handle: it opens no more.
        var discarded = false
        /// A lockable class this file had while open since the last lock: the kernel
        /// may hold its pages, which a lock of that class must drop.
        var cachedClass: ProtectionClass?
    }

    struct Places {
        /// Reached by, not checked yet: checked before the node's contents are used.
        var pending: [NamePlace] = []
        var checked: [NamePlace] = []

        mutating func reached(_ place: NamePlace) {
            if !checked.contains(place) && !pending.contains(place) { pending.append(place) }
        }

        /// Names it lost through the mount (rename, unlink), recent first: a lookup that
        /// raced the change may still bring one, which is stale, not foreign.
        var departed: [NamePlace] = []

        mutating func vouched(_ place: NamePlace) {
            pending.removeAll { $0 == place }
            departed.removeAll { $0 == place }
            if !checked.contains(place) { checked.append(place) }
        }

        mutating func left(_ place: NamePlace) {
            checked.removeAll { $0 == place }
            departed.insert(place, at: 0)
            if departed.count > 8 { departed.removeLast() }
        }
    }

    /// `fd`: an O_PATH descriptor of the node, owned by the entry. With a `handle` and a
    /// `cache`, the caller admits the new entry to the cache.
    init(fd: Int32, key: InodeKey, type: mode_t, generation: UInt64, handle: KernelFileHandle? = nil,
         cache: DescriptorCache? = nil, birth: FileBirth? = nil, isRoot: Bool = false) {
        self.key = key
        self.birth = birth
        self.type = type
        self.generation = generation
        self.handle = cache == nil ? nil : handle
        self.cache = handle == nil ? nil : cache
        descriptor = Mutex(Descriptor(fd: fd))
        nodeID = isRoot ? fuse_ino_t(FUSE_ROOT_ID) : fuse_ino_t(UInt(bitPattern: Unmanaged.passUnretained(self).toOpaque()))
    }

    deinit {
        let fd = descriptor.withLock { $0.fd }
        if fd >= 0 { close(fd) }
    }

    var isRegular: Bool { type == S_IFREG }
    var isDirectory: Bool { type == S_IFDIR }

    /// Whether the descriptor is open now (so the backing inode is alive).
    var holdsDescriptor: Bool { descriptor.withLock { $0.fd >= 0 } }

    /// Runs `body` with the node's O_PATH descriptor, reopened from its handle if it
    /// was closed, and kept open until `body` returns (eviction passes over it); the
    /// failure to reopen it (ESTALE: the inode is gone) otherwise.
    @discardableResult
    func withDescriptor<T>(_ body: (Int32) throws(Errno) -> T) throws(Errno) -> T {
        let fd = try pin()
        defer { unpin() }
        return try body(fd)
    }

    /// `withDescriptor` for one system call on the descriptor (-1 and errno when it
    /// fails): what it returns; its errno, or the reopening's, thrown.
    @discardableResult @inline(__always)
    func systemCall<R: FixedWidthInteger & SignedInteger>(_ call: (Int32) -> R) throws(Errno) -> R {
        try withDescriptor { (fd) throws(Errno) in try Errno.check(call(fd)) }
    }

    /// Runs `body` with the node's descriptor if it is open now, never reopening it;
    /// nil when it is closed.
    func withOpenDescriptor<T>(_ body: (Int32) throws(Errno) -> T) throws(Errno) -> T? {
        guard let fd = pinIfOpen() else { return nil }
        defer { unpin() }
        return try body(fd)
    }

    private func pinIfOpen() -> Int32? {
        descriptor.withLock { state -> Int32? in
            guard state.fd >= 0 else { return nil }
            state.users += 1
            state.referenced = true
            return state.fd
        }
    }

    private func pin() throws(Errno) -> Int32 {
        if let fd = pinIfOpen() { return fd }
        guard let handle, let cache else { throw Errno.badDescriptor }  // never: such descriptors stay open
        let fresh = try handle.open(on: cache.mountFD)
        let (fd, spare, admit) = descriptor.withLock { state -> (Int32, Int32, Bool) in
            state.users += 1
            state.referenced = true
            if state.fd >= 0 { return (state.fd, fresh, false) }  // a racing use reopened it
            state.fd = fresh
            // A forgotten entry's descriptor closes with its last user, outside the cache.
            return (fresh, -1, !state.retired)
        }
        if spare >= 0 { close(spare) }
        if admit { cache.admit(self) }
        return fd
    }

    private func unpin() {
        let closing = descriptor.withLock { state -> Int32 in
            state.users -= 1
            guard state.users == 0, state.retired, state.fd >= 0 else { return -1 }
            defer { state.fd = -1 }
            return state.fd
        }
        if closing >= 0 { close(closing) }
    }

    /// Opens the descriptor now if it is closed (the backing inode must be alive), so
    /// that it keeps the inode until evicted or forgotten.
    func holdOpen() {
        _ = try? withDescriptor { _ in }
    }

    /// Closes the descriptor for the cache if nothing needs it: true when the entry
    /// leaves the cache (closed, or forgotten), false when it stays for now (in use,
    /// open files, or used since the hand last passed, whose mark this clears).
    func evict() -> Bool {
        if open.withLock({ $0.handles > 0 }) { return false }
        let closing = descriptor.withLock { state -> Int32? in
            if state.retired { return -1 }
            guard state.users == 0, state.fd >= 0 else { return state.fd < 0 ? -1 : nil }
            if state.referenced {
                state.referenced = false
                return nil
            }
            defer { state.fd = -1 }
            return state.fd
        }
        guard let closing else { return false }
        if closing >= 0 { close(closing) }
        return true
    }

    /// The kernel forgot the entry: its descriptor closes now, or with its last user.
    func retire() {
        let closing = descriptor.withLock { state -> Int32 in
            state.retired = true
            guard state.users == 0, state.fd >= 0 else { return -1 }
            defer { state.fd = -1 }
            return state.fd
        }
        if closing >= 0 { close(closing) }
    }

    /// The node's attributes, straight from the backing node (sizes are backing sizes).
    func backingStat() throws(Errno) -> stat {
        var st = stat()
        if let file = openFileWithoutDescriptor {
            try Errno.check(fstat(file.fd, &st))
            return st
        }
        try withDescriptor { (fd) throws(Errno) in
            try Errno.check(fstatat(fd, "", &st, AtFlag.emptyPath | AT_SYMLINK_NOFOLLOW))
        }
        return st
    }

    /// The open-file entry, if a handle holds one.
    var openFile: OpenFile? { open.withLock { $0.file } }

    /// The open-file entry of a node whose entry holds no descriptor (made from a file
    /// handle, or evicted): its descriptor reaches the same inode, so a stat, chmod,
    /// chown or utimes (tar's, right after the create) need not reopen the node by
    /// handle. Keep it while its descriptor is in use.
    var openFileWithoutDescriptor: OpenFile? { holdsDescriptor ? nil : openFile }

    /// Counts one more handle on the open-file entry, making it with `make` (outside
    /// the lock: it reads the header) when there is none.
    func retainOpen(_ make: () throws(Errno) -> OpenFile) throws(Errno) -> OpenFile {
        let found = try open.withLock { (state) throws(Errno) -> OpenFile? in
            if state.discarded { throw Errno.noEntry }
            guard let file = state.file else {
                state.opening += 1
                return nil
            }
            state.handles += 1
            if file.protectionClass != .none { state.cachedClass = file.protectionClass }
            return file
        }
        if let found { return found }
        let fresh: OpenFile
        do throws(Errno) { fresh = try make() } catch {
            open.withLock { $0.opening -= 1 }
            throw error
        }
        // A racing open may have made one meanwhile: use it, drop ours.
        return open.withLock { state -> OpenFile in
            state.opening -= 1
            let file = state.file ?? fresh
            state.file = file
            state.handles += 1
            if file.protectionClass != .none { state.cachedClass = file.protectionClass }
            return file
        }
    }

    /// Cuts away the data of this regular file if it has no name left (its last was
    /// just unlinked) and no handle, nor an open on the way: nothing can reach the data
    /// any more, but a descriptor held for the kernel would keep its blocks until the
    /// kernel forgets the inode. Later opens fail with ENOENT, as if they had come after
    /// the unlink.
    func discardIfUnlinked() {
        // An entry whose descriptor is closed (made from a handle, evicted, or forgotten
        // meanwhile) holds no blocks: reopening it would only meet ESTALE.
        _ = try? withOpenDescriptor { (fd) throws(Errno) in
            try open.withLock { (state) throws(Errno) in
                guard state.handles == 0, state.opening == 0, !state.discarded else { return }
                var st = stat()
                guard fstat(fd, &st) == 0, st.st_nlink == 0 else { return }
                let writable = try withProcPath(fd) { (path) throws(Errno) in try Errno.check(Glibc.open(path, O_WRONLY | O_CLOEXEC)) }
                state.discarded = true
                defer { close(writable) }
                try Errno.check(ftruncate(writable, 0))
            }
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
