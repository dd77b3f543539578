// What the filesystem does when classes become unavailable (lock after the grace
// period, restart): for every file of those classes, refuse reads, have the kernel
// write back and drop its cached pages (mmap included), then wipe the file key.
// completeUnlessOpen handles survive a lock (they keep working until closed) but not
// a restart.
import BlockStore
import CFuse
import DataProtection
import Glibc

extension SandboxFileSystem {
    func revoke(_ classes: Set<ProtectionClass>, reason: LockStateManager.RevokeReason) {
        let revokedFiles = classes.subtracting(reason == .lock ? [.completeUnlessOpen] : [])
        var invalidated = Set<String>()
        for file in files.files(of: revokedFiles) {
            file.readsBlocked.store(true, ordering: .releasing)
            let paths = files.withPaths(of: file)
            for path in paths { invalidate(path) }
            invalidated.formUnion(paths)
            file.content.revokeKey()
            // A write that finished between the first invalidation and the wipe may have
            // left a (clean) plaintext page behind: drop the pages once more.
            for path in paths { invalidate(path) }
            file.readsBlocked.store(false, ordering: .releasing)
        }
        // Closed files may still have pages in the kernel's cache.
        for path in files.takeCachedPaths(of: revokedFiles) where !invalidated.contains(path) {
            invalidate(path)
        }
        pool.scrub()
        logger.info("revoked keys of classes \(revokedFiles.map(\.name).sorted())")
    }

    /// Drops the kernel's cached pages of `path`, writing dirty ones back first.
    func invalidate(_ path: String) {
        guard let fuse else { return }
        _ = path.withCString { fuse_invalidate_path(fuse, $0) }
    }
}
