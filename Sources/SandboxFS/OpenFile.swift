// The state of one open regular file, shared by every handle and every hard link to
// it: the backing descriptor, the file's identity and class, its unwrapped key (while
// its class allows), its plaintext size, and the readers-writer lock that orders I/O
// against writes, truncation and key revocation.
import DataProtection
import Glibc
import Synchronization

struct InodeKey: Hashable, Sendable {
    let device: UInt64
    let inode: UInt64
}

final class OpenFile: @unchecked Sendable {
    // @unchecked: every mutable field below is read under `lock` (shared) and written
    // under `lock` (exclusive); `handles` and `paths` are guarded by the table's mutex.
    let inode: InodeKey
    let fd: Int32
    let fileID: [UInt8]
    var header: FileHeader
    var protectionClass: ProtectionClass
    var key: SecureBuffer?
    var plainSize: Int
    /// Whether this entry wrote to the backing file since it was opened (BlockIO sets
    /// it): only then does revoking the key sync the file first.
    var unsynced = false
    /// An empty file's one sealed block, read with the header (so the read is no access),
    /// until the first open with the key checks it (BlockIO.checkEmptyFile).
    var uncheckedEmptyBlock: [UInt8]?
    /// Set while a lock flushes this file: reads are refused so nothing refills the
    /// page cache, writes (the kernel writing back mmap pages) still go through.
    let readsBlocked = Atomic<Bool>(false)
    /// The privilege epoch at which this file last had nothing a write must remove
    /// (Privileges.swift); 0: not checked yet.
    let privilegesCleanAt = Atomic<UInt64>(0)
    private let rwlock: UnsafeMutablePointer<pthread_rwlock_t>

    var handles = 0
    var paths: Set<String> = []

    init(inode: InodeKey, fd: Int32, header: FileHeader, slot: FileHeader.KeySlot, key: SecureBuffer?, plainSize: Int) {
        self.inode = inode
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

    func reading<R>(_ body: () throws -> R) rethrows -> R {
        pthread_rwlock_rdlock(rwlock)
        defer { pthread_rwlock_unlock(rwlock) }
        return try body()
    }

    func writing<R>(_ body: () throws -> R) rethrows -> R {
        pthread_rwlock_wrlock(rwlock)
        defer { pthread_rwlock_unlock(rwlock) }
        return try body()
    }

    /// Wipes the file key: from now on every read and write gets EPERM.
    func revokeKey() {
        writing {
            // A sync costs a disk cache flush even for a clean file (a lock of 1,000
            // open files took 60 ms more with one each): only files written through.
            if unsynced { fdatasync(fd); unsynced = false }
            key?.wipe()
            key = nil
        }
    }
}

/// What a FUSE file handle (fi->fh) points to.
final class FileHandle: @unchecked Sendable {
    let file: OpenFile
    let append: Bool
    init(file: OpenFile, append: Bool) { self.file = file; self.append = append }
}

/// A negative errno as a thrown or returned error, for the few paths that need one.
struct FSErrno: Error {
    let value: Int32
    init(_ value: Int32) { self.value = value }
}
