// A file that fails with EIO for damage, said in the log once per file for the mount's
// life: damage found when it is opened (a header that does not open, a backing file cut
// short mid-block, a file key that does not unwrap) or when it is read (a block that
// does not open, or a file cut short on a block boundary, whose size alone does not
// show the cut: its last stored block opens only as an ordinary one). The file is
// named by its inode number, the same in the mount and in the backing tree (`find
// MOUNT -inum N`): not by its path, for names are sealed and daemon.log lies in the
// device directory. Once, for a program retrying its open or read would fill the log.
import BlockStore
import Synchronization

/// The files whose damage the log has told: by file ID, or by inode number where the
/// header that holds the ID does not open.
final class DamageNotes: Sendable {
    enum DamagedFile: Hashable {
        case file(id: [UInt8])
        case unreadableHeader(inode: UInt64)
    }

    private let told = Mutex<Set<DamagedFile>>([])

    /// Whether `file` was not told yet; it is from now on.
    func isNew(_ file: DamagedFile) -> Bool { told.withLock { $0.insert(file).inserted } }
}

extension SandboxFileSystem {
    /// Logs the damage behind a read of `file` (on `inode`) that failed with EIO, the
    /// first time for that file.
    func noteDamagedRead(_ file: OpenFile, _ inode: Inode) {
        guard damageNotes.isNew(.file(id: file.content.fileID)) else { return }
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

    /// Logs damage found on opening the file on `inode` (`file`: which file, by its
    /// header's ID, or its inode's where the header does not open), the first time.
    func noteDamagedOpen(_ file: DamageNotes.DamagedFile, _ inode: Inode, _ what: String) {
        guard damageNotes.isNew(file) else { return }
        logger.error("\(what) (inode \(inode.key.inode)): damaged, it reads as EIO")
    }
}
