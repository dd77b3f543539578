// The inodes whose O_PATH descriptors are open, when entries can reopen theirs by file
// handle: a bounded set, so the daemon's descriptors do not grow with every inode the
// kernel keeps cached (past the descriptor limit an untar of a large tree would fail
// with EMFILE). A clock: each use marks its inode referenced; past the capacity,
// the hand passes over referenced inodes (clearing the mark), inodes in use right now
// and inodes with open files, and closes the first descriptor that is none of these.
// Lock order: this cache's mutex, then an inode's `open`, then its `descriptor`.
import Synchronization

final class DescriptorCache: Sendable {
    /// Open descriptors kept beyond those in use or of open files.
    static let defaultCapacity = 4096
    /// How many inodes one admission looks at at most (amortized: each admission adds one).
    private static let sweepBudget = 64

    /// A descriptor on the backing filesystem, for open_by_handle_at (the sandbox root's,
    /// readable: the call refuses an O_PATH one with EBADF).
    let mountFD: Int32
    let capacity: Int
    private let state = Mutex(Ring())

    private struct Ring {
        var inodes: [Inode] = []
        var hand = 0
    }

    init(mountFD: Int32, capacity: Int = DescriptorCache.defaultCapacity) {
        self.mountFD = mountFD
        self.capacity = capacity
    }

    /// The number of inodes holding a descriptor through the cache (for tests and status).
    var count: Int { state.withLock { $0.inodes.count } }

    /// Takes in `inode`, whose descriptor was just opened, and closes the least
    /// recently used descriptors beyond the capacity.
    func admit(_ inode: Inode) {
        state.withLock { ring in
            ring.inodes.append(inode)
            var budget = Self.sweepBudget
            while ring.inodes.count > capacity && budget > 0 {
                budget -= 1
                if ring.hand >= ring.inodes.count { ring.hand = 0 }
                if ring.inodes[ring.hand].evict() {
                    ring.inodes.swapAt(ring.hand, ring.inodes.count - 1)
                    ring.inodes.removeLast()
                } else {
                    ring.hand += 1
                }
            }
        }
    }
}
