// What the filesystem does when classes become unavailable (lock after the grace
// period, restart): for every file of those classes, refuse reads, have the kernel
// write back and drop its cached pages (mmap included), then wipe the file key.
// One kernel inode per backing inode: one invalidation drops the pages of every name.
// completeUnlessOpen handles survive a lock (they keep working until closed) but not
// a restart. Runs on the lock state's thread, never inside a FUSE request.
import BlockStore
import CFuse
import DataProtection
import Glibc

extension SandboxFileSystem {
    func revoke(_ classes: Set<ProtectionClass>, reason: LockStateManager.RevokeReason) {
        let revokedFiles = classes.subtracting(reason == .lock ? [.completeUnlessOpen] : [])
        // A spare's file key goes as an open file's does (SpareFiles).
        spares.discard()
        // Directories' class records are read and verified again after a lock or
        // restart: what the backing tree holds then is what counts.
        for inode in inodes.all() where !inode.isRegular { inode.classRecord.withLock { $0 = nil } }
        for inode in inodes.all() where inode.isRegular {
            // The open file of a revoked class, and whether the kernel may cache pages
            // of a revoked class (open now or since the last lock).
            let (open, cached) = inode.open.withLock { state -> (OpenFile?, Bool) in
                let cached = state.cachedClass.map { revokedFiles.contains($0) } ?? false
                if cached { state.cachedClass = nil }
                return (state.file, cached)
            }
            if let file = open, file.reading({ revokedFiles.contains(file.protectionClass) }) {
                file.readsBlocked.store(true, ordering: .releasing)
                kernel.invalidatePages(inode)
                file.content.revokeKey()
                // A write that finished between the first invalidation and the wipe may
                // have left a (clean) plaintext page behind: drop the pages once more.
                kernel.invalidatePages(inode)
                file.readsBlocked.store(false, ordering: .releasing)
            } else if cached {
                kernel.invalidatePages(inode)  // closed, but its pages may still be cached
            }
        }
        pool.scrub()
        logger.info("revoked keys of classes \(revokedFiles.map(\.name).sorted())")
    }
}
