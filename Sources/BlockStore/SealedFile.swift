// One backing file's content as the block layer sees it: its descriptor, header,
// identity and class, its unwrapped key (while its class allows), its plaintext size,
// and the readers-writer lock that orders I/O against writes, truncation and key
// revocation. Knows nothing of FUSE: the mount shares one per open inode, fsck makes
// one per file it checks.
import DataProtection
import Glibc

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

    deinit {
        key?.wipe()
        close(fd)
        pthread_rwlock_destroy(rwlock)
        rwlock.deallocate()
    }

    public func reading<R>(_ body: () throws -> R) rethrows -> R {
        pthread_rwlock_rdlock(rwlock)
        defer { pthread_rwlock_unlock(rwlock) }
        return try body()
    }

    public func writing<R>(_ body: () throws -> R) rethrows -> R {
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
