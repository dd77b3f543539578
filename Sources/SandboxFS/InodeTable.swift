// The kernel's inodes, by backing (st_dev, st_ino): what lookup, readdirplus, create,
// mknod, mkdir, symlink and link hand to the kernel, each adding one lookup, and what
// forget takes away. An entry goes when its count reaches zero; the root never goes.
//
// With file handles (DescriptorCache) an entry does not hold its backing inode alive,
// so the inode may be freed (unlinked, closed) while the kernel still knows the entry,
// and its number given to a new inode: a lookup whose handle differs from the entry's
// replaces it, and the old entry waits among the stale ones for the kernel to forget it.
import BlockStore
import CFuse
import DataProtection
import Glibc
import Synchronization
import SystemCalls

final class InodeTable: Sendable {
    let root: Inode
    /// Open descriptors beyond those in use; nil when entries keep theirs (no handles).
    let descriptors: DescriptorCache?
    private let entries: Mutex<Entries>
    private let generations = Atomic<UInt64>(1)
    /// Whether the backing filesystem's handles show their inode number (`handle(of:in:)`).
    private let handlesShowInodes = Atomic<Bool>(true)
    /// The number of entries, for `dpfs status` (read without the mutex).
    let count = Atomic<Int>(1)

    private struct Entries {
        var byKey: [InodeKey: Inode]
        /// Entries whose backing inode is gone, the kernel still knowing them.
        var stale: [ObjectIdentifier: Inode] = [:]
        /// Handles of regular files the kernel forgot, for their next lookup.
        var dormant: DormantHandles
    }

    /// `rootFD`: an O_PATH descriptor of the sandbox directory, owned by the table.
    /// `mountFD`: a readable one (open_by_handle_at refuses O_PATH), not owned.
    /// `cacheCapacity`: open descriptors kept when the filesystem makes file handles.
    init(rootFD: Int32, mountFD: Int32, cacheCapacity: Int = DescriptorCache.defaultCapacity) throws(Errno) {
        var st = stat()
        guard fstatat(rootFD, "", &st, AtFlag.emptyPath) == 0 else { throw Errno.current }
        root = Inode(fd: rootFD, key: InodeKey(st), type: S_IFDIR, generation: 0, isRoot: true)
        root.lookups = 1
        entries = Mutex(Entries(byKey: [root.key: root], dormant: DormantHandles()))
        descriptors = KernelFileHandle.supported(on: mountFD) ? DescriptorCache(mountFD: mountFD, capacity: cacheCapacity) : nil
    }

    /// The entry for the node `fd` (an O_PATH descriptor, consumed) whose attributes
    /// are `st`, made if new; counts one lookup.
    func remember(fd: Int32, _ st: stat) -> Inode {
        remember(st, handle: handle(of: fd, st), fd: fd)
    }

    /// The entry for the unnamed file `fd` (an O_PATH descriptor, consumed) whose
    /// attributes are `st`, made if new; counts one lookup. Its handle only tells it
    /// from an entry of the same number: the descriptor stays open (never left to the
    /// descriptor cache), as a handle reopens no file without links once the inode has
    /// left the inode cache, which the descriptor keeps it from doing.
    func remember(unnamed fd: Int32, _ st: stat) -> Inode {
        remember(st, handle: handle(of: fd, st), fd: fd, cached: false)
    }

    /// The handle of the node `fd` (any descriptor) whose attributes are `st`, when
    /// entries here can be made from handles.
    func handle(of fd: Int32, _ st: stat) -> KernelFileHandle? {
        handle(of: fd, device: UInt64(st.st_dev))
    }

    /// The handle of the node `fd` on the filesystem `device`, when entries here can be
    /// made from handles.
    func handle(of fd: Int32, device: UInt64) -> KernelFileHandle? {
        // Only nodes on the root's filesystem: open_by_handle_at reads a handle on it.
        guard descriptors != nil, device == root.key.device else { return nil }
        return KernelFileHandle(of: fd)
    }

    /// The entry for the node `handle` names, whose attributes are `st` and birth time
    /// `birth` (when read), made if new without a descriptor (opened from the handle
    /// when first used); one lookup.
    func remember(handle: KernelFileHandle, _ st: stat, birth: FileBirth? = nil) -> Inode {
        remember(st, handle: handle, fd: -1, birth: birth)
    }

    /// A new entry for the regular file whose attributes `st` and birth time `birth`
    /// a lookup just read, made from the handle recorded when the kernel forgot its
    /// last entry, if that is the same life of the inode; one lookup. nil when the
    /// kernel knows an entry of that number now (whose handle the caller must compare:
    /// `remember`) or none is recorded.
    func rememberDormant(_ st: stat, birth: FileBirth) -> Inode? {
        guard descriptors != nil, st.st_mode & S_IFMT == S_IFREG else { return nil }
        let key = InodeKey(st)
        return entries.withLock { table -> Inode? in
            guard table.byKey[key] == nil, let handle = table.dormant.take(key, birth: birth) else { return nil }
            return makeEntry(&table, st, handle: handle, fd: -1, birth: birth)
        }
    }

    /// This daemon just freed the inode `key` names (its last name unlinked or renamed
    /// over; the kernel, not yet answered, still holds the entry): neither a recorded
    /// handle nor the entry's own may meet the number's next inode.
    func noteFreed(_ key: InodeKey) {
        entries.withLock { table in
            table.dormant.remove(key)
            table.byKey[key]?.freedThroughMount.store(true, ordering: .relaxed)
        }
    }

    /// The handle of `name` in `directoryFD`, whose attributes `st` were just read by
    /// that name, when entries here can be made from handles and this one holds the
    /// same inode number (the name was not replaced in between); nil: open the node.
    /// A replacement that reused the very number in between goes unseen: the entry's
    /// descriptor, opened from the handle, is still the handle's node, whose name tags
    /// are checked before its contents are used.
    func handle(of name: UnsafePointer<CChar>, in directoryFD: Int32, matching st: stat) -> KernelFileHandle? {
        guard descriptors != nil, handlesShowInodes.load(ordering: .relaxed), UInt64(st.st_dev) == root.key.device,
              let handle = KernelFileHandle(at: directoryFD, name) else { return nil }
        guard let number = handle.inodeNumber else {
            // This filesystem's handles do not show (e.g. btrfs, tmpfs): stop asking.
            handlesShowInodes.store(false, ordering: .relaxed)
            return nil
        }
        return number == UInt64(st.st_ino) ? handle : nil
    }

    /// `fd`: the node's O_PATH descriptor (consumed), or -1 with a `handle`; a new
    /// entry with both leaves its descriptor to the cache when `cached`.
    private func remember(_ st: stat, handle: KernelFileHandle?, fd: Int32, birth: FileBirth? = nil,
                          cached: Bool = true) -> Inode {
        let key = InodeKey(st)
        let (inode, spare, admit) = entries.withLock { table -> (Inode, Int32, Bool) in
            if let existing = table.byKey[key] {
                // No handle now (a failed name_to_handle_at): trust the number, as
                // without handles; nor has an entry without one, whose descriptor
                // stays open and so keeps its inode, and its number, alive.
                if existing.handle == handle || handle == nil || existing.handle == nil {
                    existing.lookups += 1
                    return (existing, fd, false)
                }
                table.byKey[key] = nil
                table.stale[ObjectIdentifier(existing)] = existing
            }
            let made = makeEntry(&table, st, handle: handle, fd: fd, birth: birth)
            return (made, -1, cached && made.handle != nil && fd >= 0)
        }
        if spare >= 0 { close(spare) }
        if admit, let descriptors { descriptors.admit(inode) }
        return inode
    }

    /// A new entry in `table`, with one lookup.
    private func makeEntry(_ table: inout Entries, _ st: stat, handle: KernelFileHandle?, fd: Int32,
                           birth: FileBirth?) -> Inode {
        let made = Inode(fd: fd, key: InodeKey(st), type: st.st_mode & S_IFMT,
                         generation: generations.add(1, ordering: .relaxed).newValue,
                         handle: handle, cache: descriptors, birth: birth)
        made.lookups = 1
        table.byKey[made.key] = made
        count.add(1, ordering: .relaxed)
        return made
    }

    /// The entry for `key` if there is one, with one more lookup counted. Only an entry
    /// that holds its inode open now is surely the inode of that number: another one's
    /// may be gone and the number reused (the caller then opens the node and asks
    /// `remember`, which compares handles).
    func retainExisting(_ key: InodeKey) -> Inode? {
        entries.withLock { table in
            guard let existing = table.byKey[key], existing.holdsDescriptor else { return nil }
            existing.lookups += 1
            return existing
        }
    }

    /// The entry for `key` if there is one (no lookup counted).
    func existing(_ key: InodeKey) -> Inode? {
        entries.withLock { $0.byKey[key] }
    }

    /// One more lookup of an entry the kernel knows (link's new name).
    func retain(_ inode: Inode) {
        entries.withLock { _ in inode.lookups += 1 }
    }

    /// The kernel forgets `count` lookups of `inode`.
    func forget(_ inode: Inode, _ lookups: UInt64) {
        let gone = entries.withLock { forget(inode, lookups, in: &$0) }
        // Its descriptor closes here, outside the lock, or with its last user.
        gone?.retire()
    }

    /// The kernel forgets lookups of many entries at once (a dropped cache sends
    /// thousands): one pass under the lock, where one lock per entry had the workers
    /// that serve the batches spin on it.
    func forget(_ batch: UnsafeBufferPointer<fuse_forget_data>, node: (fuse_ino_t) -> Inode) {
        var gone: [Inode] = []
        entries.withLock { table in
            for item in batch {
                if let inode = forget(node(item.ino), item.nlookup, in: &table) { gone.append(inode) }
            }
        }
        for inode in gone { inode.retire() }
    }

    /// `forget` under the lock: the entry if it went.
    private func forget(_ inode: Inode, _ lookups: UInt64, in table: inout Entries) -> Inode? {
        inode.lookups -= min(lookups, inode.lookups)
        guard inode.lookups == 0, inode !== root else { return nil }
        if table.byKey[inode.key] === inode {
            table.byKey[inode.key] = nil
            if inode.isRegular, let handle = inode.handle, let birth = inode.birth,
               !inode.freedThroughMount.load(ordering: .relaxed) {
                table.dormant.record(inode.key, handle: handle, birth: birth)
            }
        } else if table.stale.removeValue(forKey: ObjectIdentifier(inode)) == nil {
            return nil
        }
        count.add(-1, ordering: .relaxed)
        return inode
    }

    /// Every entry now (for a lock, which visits each).
    func all() -> [Inode] {
        entries.withLock { Array($0.byKey.values) }
    }
}
