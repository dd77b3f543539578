// The kernel's inodes, by backing (st_dev, st_ino): what lookup, readdirplus, create,
// mknod, mkdir, symlink and link hand to the kernel, each adding one lookup, and what
// forget takes away. An entry goes when its count reaches zero; the root never goes.
import BlockStore
import CFuse
import DataProtection
import Glibc
import Synchronization

final class InodeTable: Sendable {
    let root: Inode
    private let entries: Mutex<[InodeKey: Inode]>
    private let generations = Atomic<UInt64>(1)
    /// The number of entries, for `dpfs status` (read without the mutex).
    let count = Atomic<Int>(1)

    /// `rootFD`: an O_PATH descriptor of the sandbox directory, owned by the table.
    init(rootFD: Int32) throws(Errno) {
        var st = stat()
        guard fstatat(rootFD, "", &st, AtFlag.emptyPath) == 0 else { throw Errno.current }
        root = Inode(fd: rootFD, key: InodeKey(st), type: S_IFDIR, generation: 0, isRoot: true)
        root.lookups = 1
        entries = Mutex([root.key: root])
    }

    /// The entry for the node `fd` (an O_PATH descriptor, consumed) whose attributes
    /// are `st`, made if new; counts one lookup.
    func remember(fd: Int32, _ st: stat) -> Inode {
        let key = InodeKey(st)
        let (inode, spare) = entries.withLock { table -> (Inode, Int32) in
            if let existing = table[key] {
                existing.lookups += 1
                return (existing, fd)
            }
            let made = Inode(fd: fd, key: key, type: st.st_mode & S_IFMT,
                             generation: generations.add(1, ordering: .relaxed).newValue)
            made.lookups = 1
            table[key] = made
            count.add(1, ordering: .relaxed)
            return (made, -1)
        }
        if spare >= 0 { close(spare) }
        return inode
    }

    /// The entry for `key` if there is one, with one more lookup counted.
    func retainExisting(_ key: InodeKey) -> Inode? {
        entries.withLock { table in
            guard let existing = table[key] else { return nil }
            existing.lookups += 1
            return existing
        }
    }

    /// The entry for `key` if there is one (no lookup counted).
    func existing(_ key: InodeKey) -> Inode? {
        entries.withLock { $0[key] }
    }

    /// One more lookup of an entry the kernel knows (link's new name).
    func retain(_ inode: Inode) {
        entries.withLock { _ in inode.lookups += 1 }
    }

    /// The kernel forgets `count` lookups of `inode`.
    func forget(_ inode: Inode, _ lookups: UInt64) {
        let gone = entries.withLock { table -> Inode? in
            inode.lookups -= min(lookups, inode.lookups)
            guard inode.lookups == 0, inode !== root, table[inode.key] === inode else { return nil }
            count.add(-1, ordering: .relaxed)
            return table.removeValue(forKey: inode.key)
        }
        _ = gone  // its descriptor closes here, outside the lock, once no handle holds it
    }

    /// Every entry now (for a lock, which visits each).
    func all() -> [Inode] {
        entries.withLock { Array($0.values) }
    }
}
