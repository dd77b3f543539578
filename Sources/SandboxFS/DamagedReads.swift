// A read that fails with EIO for damage, said in the log once per file for the mount's
// life, as a file's damage found when it is opened is (loadFile, unwrapKey): a block
// that does not open, or a file cut short on a block boundary, whose size alone does
// not show the cut (its last stored block opens only as an ordinary one). The file is
// named by its inode number, the same in the mount and in the backing tree (`find
// MOUNT -inum N`): not by its path, for names are sealed and daemon.log lies in the
// device directory.
import BlockStore
import Synchronization

/// The files whose damage the log has told, by file ID.
final class DamageNotes: Sendable {
    private let told = Mutex<Set<[UInt8]>>([])

    /// Whether the file `fileID` was not told yet; it is from now on.
    func isNew(_ fileID: [UInt8]) -> Bool { told.withLock { $0.insert(fileID).inserted } }
}

extension SandboxFileSystem {
    /// Logs the damage behind a read of `file` (on `inode`) that failed with EIO, the
    /// first time for that file.
    func noteDamagedRead(_ file: OpenFile, _ inode: Inode) {
        guard damageNotes.isNew(file.content.fileID) else { return }
        let cutAfter: Int? = file.reading {
            guard let key = file.key else { return nil }
            let cut = pool.withBuffer { BlockIO.isCutOnBlockBoundary(file.content, key: key, scratch: $0) }
            return cut ? file.plainSize : nil
        }
        let number = inode.key.inode
        if let cutAfter {
            logger.error("a backing file is cut short after \(cutAfter) bytes, on a block boundary (inode \(number)): its last block reads as EIO")
        } else {
            logger.error("a backing file has a block that does not open (inode \(number)): damaged, it reads as EIO")
        }
    }
}
