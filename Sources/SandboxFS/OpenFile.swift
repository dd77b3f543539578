// The state of one open regular file, on its inode entry and so shared by every handle
// and every hard link: its content (BlockStore's SealedFile: descriptor, header, key,
// plaintext size and the readers-writer lock) and what the mount adds: whether a lock
// is flushing it, and when its privileges were last checked.
import BlockStore
import DataProtection
import Glibc
import Synchronization

final class OpenFile: Sendable {
    let content: SealedFile
    /// Set while a lock flushes this file: reads are refused so nothing refills the
    /// page cache, writes (the kernel writing back mmap pages) still go through.
    let readsBlocked = Atomic<Bool>(false)
    /// The privilege epoch at which this file last had nothing a write must remove
    /// (Privileges.swift); 0: not checked yet.
    let privilegesCleanAt = Atomic<UInt64>(0)

    init(content: SealedFile) { self.content = content }

    var fd: Int32 { content.fd }
    /// Read under the content's lock.
    var key: SecureBuffer? { content.key }
    var plainSize: Int { content.plainSize }
    var protectionClass: ProtectionClass { content.protectionClass }

    func reading<R, E: Error>(_ body: () throws(E) -> R) throws(E) -> R { try content.reading(body) }
    func writing<R, E: Error>(_ body: () throws(E) -> R) throws(E) -> R { try content.writing(body) }
}

/// What a FUSE file handle (fi->fh) points to: the open file and the inode it is on.
final class FileHandle: Sendable {
    let inode: Inode
    let file: OpenFile
    let append: Bool
    init(inode: Inode, file: OpenFile, append: Bool) { self.inode = inode; self.file = file; self.append = append }
}
