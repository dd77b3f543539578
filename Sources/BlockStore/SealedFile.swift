// One backing file's content as the block layer sees it: its descriptor, header,
// identity and class, its unwrapped key (while its class allows), its plaintext size,
// and the readers-writer lock that orders I/O against writes, truncation and key
// revocation. Knows nothing of FUSE: the mount shares one per open inode, fsck makes
// one per file it checks.
import DataProtection
import Glibc
import Synchronization
import SystemCalls

public final class SealedFile: @unchecked Sendable {
    // @unchecked: every mutable field below is read under `lock` (shared) and written
    // under `lock` (exclusive).
    public let fd: Int32
    public let fileID: [UInt8]
    public var header: FileHeader
    public var protectionClass: ProtectionClass
    public var key: SecureBuffer?
    public var plainSize: Int
    /// Whether this file was written since it was opened (BlockIO sets it): only then
    /// does revoking the key sync the file first.
    public var unsynced = false
    /// An empty file's one sealed block, read with the header (so the read is no
    /// access), until the first open with the key checks it.
    public var uncheckedEmptyBlock: [UInt8]?
    private let rwlock: UnsafeMutablePointer<pthread_rwlock_t>
    /// Whether reads through `fd` set the backing file's access time: a read of the
    /// file does, the reads a write or truncate makes of partial blocks do not (as a
    /// write leaves atime on ext4). `fd` is opened with the flag cleared.
    private let readMode = Atomic<UInt8>(ReadMode.access)
    /// Held to change the flag: the descriptor's status flags without O_NOATIME, read
    /// at the first change (-1 before), so a change is one fcntl and the flag always
    /// ends as `readMode` says.
    private let readModeChange = Mutex<Int32>(-1)
    private enum ReadMode {
        static let access: UInt8 = 0, quiet: UInt8 = 1
        /// O_NOATIME refused (the daemon neither owns the file nor has CAP_FOWNER).
        static let quietRefused: UInt8 = 2
    }

    /// Takes ownership of `fd`: closed when the value goes.
    public init(fd: Int32, header: FileHeader, slot: FileHeader.KeySlot, key: SecureBuffer?, plainSize: Int) {
        self.fd = fd
        self.header = header
        self.fileID = header.fileID
        self.protectionClass = slot.protectionClass
        self.key = key
        self.plainSize = plainSize
        rwlock = .allocate(capacity: 1)
        pthread_rwlock_init(rwlock, nil)
    }

    /// Makes the next reads through `fd` an access of the file (true) or not (false):
    /// an fcntl only when that changes. Readers and writers may call it: at worst a
    /// read racing a write's reads leaves atime as it was.
    public func readsAccess(_ access: Bool) {
        let wanted = access ? ReadMode.access : ReadMode.quiet
        let mode = readMode.load(ordering: .acquiring)
        guard mode != wanted, mode != ReadMode.quietRefused else { return }
        readModeChange.withLock { base in
            let mode = readMode.load(ordering: .acquiring)
            guard mode != wanted, mode != ReadMode.quietRefused else { return }
            if base < 0 {
                let flags = fcntl(fd, F_GETFL)
                guard flags >= 0 else { return }
                base = flags & ~OpenFlag.noAccessTime
            }
            if fcntl(fd, F_SETFL, access ? base : base | OpenFlag.noAccessTime) == 0 {
                readMode.store(wanted, ordering: .releasing)
            } else if errno == EPERM {
                readMode.store(ReadMode.quietRefused, ordering: .releasing)
            }
        }
    }

    deinit {
        key?.wipe()
        close(fd)
        pthread_rwlock_destroy(rwlock)
        rwlock.deallocate()
    }

    public func reading<R, E: Error>(_ body: () throws(E) -> R) throws(E) -> R {
        pthread_rwlock_rdlock(rwlock)
        defer { pthread_rwlock_unlock(rwlock) }
        return try body()
    }

    public func writing<R, E: Error>(_ body: () throws(E) -> R) throws(E) -> R {
        pthread_rwlock_wrlock(rwlock)
        defer { pthread_rwlock_unlock(rwlock) }
        return try body()
    }

    /// Wipes the file key: from now on every read and write gets EPERM.
    public func revokeKey() {
        writing {
            // A sync costs a disk cache flush even for a clean file (a lock of 1,000
            // open files took 60 ms more with one each): only files written through.
            if unsynced { fdatasync(fd); unsynced = false }
            key?.wipe()
            key = nil
        }
    }
}
