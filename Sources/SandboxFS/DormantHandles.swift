// The file handles of regular files the kernel has forgotten, by backing (st_dev,
// st_ino), so that looking one up again (a stat after the kernel dropped its caches, a
// second pass over a tree) costs one statx and no name_to_handle_at. A handle is taken
// again only for the same life of that inode number: the lookup's birth time must be
// the one recorded. A number this daemon frees (unlink, rename over it) loses its
// record before the kernel hears of it (InodeTable.noteFreed), so its next inode never
// meets the old handle even when both were born in the same clock tick. A number
// freed in the backing tree behind the daemon's back, and reused within one tick,
// would give its new inode the old handle: its first use meets ESTALE, on which the
// kernel looks the name up again (LOOKUP_REVAL), and that lookup, finding the entry,
// asks for the handle and replaces it.
import BlockStore
import CLinux
import Glibc
import SystemCalls

struct DormantHandles: Sendable {
    private struct Record: Sendable {
        let handle: KernelFileHandle
        let birth: FileBirth
        /// Which recording this is: a slot of `order` drops its key's record only if
        /// it is still the one that slot recorded.
        let serial: UInt64
    }

    /// Records kept at most: about 150 bytes each.
    static let defaultCapacity = 16_384

    private var records: [InodeKey: Record] = [:]
    /// What was recorded, oldest first once full: past the capacity, the oldest goes.
    private var order: [(key: InodeKey, serial: UInt64)] = []
    private var next = 0
    private var serial: UInt64 = 0
    private let capacity: Int

    init(capacity: Int = DormantHandles.defaultCapacity) {
        self.capacity = capacity
    }

    mutating func record(_ key: InodeKey, handle: KernelFileHandle, birth: FileBirth) {
        guard capacity > 0 else { return }
        serial += 1
        if order.count < capacity {
            order.append((key, serial))
        } else {
            let oldest = order[next]
            if records[oldest.key]?.serial == oldest.serial { records[oldest.key] = nil }
            order[next] = (key, serial)
            next = (next + 1) % capacity
        }
        records[key] = Record(handle: handle, birth: birth, serial: serial)
    }

    /// The handle recorded for `key` if it is the inode born at `birth`, taken out.
    mutating func take(_ key: InodeKey, birth: FileBirth) -> KernelFileHandle? {
        guard let record = records.removeValue(forKey: key) else { return nil }
        return record.birth == birth ? record.handle : nil
    }

    mutating func remove(_ key: InodeKey) {
        records[key] = nil
    }
}
