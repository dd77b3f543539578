// The state of one open regular file, shared by every handle and every hard link to
// it: its content (BlockStore's SealedFile: descriptor, header, key, plaintext size and
// the readers-writer lock) and what the mount adds: how many handles hold it, whether
// a lock is flushing it, and when its privileges were last checked.
import BlockStore
import DataProtection
import Glibc
import Synchronization

struct InodeKey: Hashable, Sendable {
    let device: UInt64
    let inode: UInt64
}

final class OpenFile: @unchecked Sendable {
    // @unchecked: `handles` and `paths` are guarded by the table's mutex; the content
    // by its own lock.
    let inode: InodeKey
    let content: SealedFile
    /// Set while a lock flushes this file: reads are refused so nothing refills the
    /// page cache, writes (the kernel writing back mmap pages) still go through.
    let readsBlocked = Atomic<Bool>(false)
    /// The privilege epoch at which this file last had nothing a write must remove
    /// (Privileges.swift); 0: not checked yet.
    let privilegesCleanAt = Atomic<UInt64>(0)

    var handles = 0
    var paths: Set<String> = []

    init(inode: InodeKey, content: SealedFile) {
        self.inode = inode
        self.content = content
    }

    var fd: Int32 { content.fd }
    var key: SecureBuffer? { content.key }
    var plainSize: Int { content.plainSize }
    var protectionClass: ProtectionClass { content.protectionClass }

    func reading<R>(_ body: () throws -> R) rethrows -> R { try content.reading(body) }
    func writing<R>(_ body: () throws -> R) rethrows -> R { try content.writing(body) }
}

/// What a FUSE file handle (fi->fh) points to.
final class FileHandle: @unchecked Sendable {
    let file: OpenFile
    let append: Bool
    init(file: OpenFile, append: Bool) { self.file = file; self.append = append }
}
