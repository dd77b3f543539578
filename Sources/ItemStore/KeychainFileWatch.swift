// The keychain's files as the daemon's own writes left them. The record check runs when
// the store opens; after that the daemon's connections read whatever the file holds,
// so an older copy written over keychain.sqlite in place (`cp`) while the device runs
// would be served — deleted items back, replaced secrets — and the next write would
// record the copy's state, moving the record back. So every read and write first
// compares the file's and its -wal's identity (inode, size, change time) with what the
// daemon's last write left. Files that differ are read afresh under the writer's lock
// and checked against the record: a write of the daemon's that a reader met before
// its stamp was taken passes; anything else stops the keychain until the next mount,
// which refuses the copy, as fsck does.
import DataProtection
import Foundation
import Glibc
import GRDB
import Logging
import Synchronization

final class KeychainFileWatch: Sendable {
    private struct Stamp: Equatable {
        var device: UInt64, inode: UInt64, size: Int64, changedSeconds: Int, changedNanoseconds: Int
    }

    let path: String
    private let expected = Mutex<[Stamp?]>([])
    private let replaced = Mutex<String?>(nil)

    init(path: String) { self.path = path }

    /// Takes the files as they are now for the daemon's own: after the store's open and
    /// each write, under the writer's lock.
    func noteOwnWrite() {
        let now = stamps()
        expected.withLock { $0 = now }
    }

    /// Whether the files were found changed by another hand: the keychain has stopped.
    var stopped: Bool { replaced.withLock { $0 != nil } }

    /// Whether the files differ from the daemon's last write's; throws once they were
    /// found changed by another hand.
    func differ() throws -> Bool {
        if let reason = replaced.withLock({ $0 }) { throw ItemStoreError(reason) }
        let now = stamps()
        return expected.withLock { $0 != now }
    }

    /// Checks the files against the device's record, read afresh, and takes them for
    /// the daemon's own when the record vouches for them. The caller holds the writer's
    /// lock, so no write of the daemon's is under way.
    func verify(device: LockStateManager) throws {
        do {
            try ItemStore.checkGeneration(path: path, device: device)
        } catch let error as DeviceRecordError {
            throw stop(because: "\(error)")
        } catch let error as DatabaseError where KeychainIntegrity.isDamage(error) {
            throw stop(because: error.message ?? "\(error.resultCode)")
        }
        noteOwnWrite()
    }

    private func stop(because cause: String) -> ItemStoreError {
        let reason = "the keychain \(path) was changed by another hand while the device runs (\(cause)); "
            + "every keychain call fails until the next mount, which refuses it (see dpfs fsck)"
        replaced.withLock { $0 = reason }
        Logger(label: "dpfs.keychain").error("\(reason)")
        return ItemStoreError(reason)
    }

    /// The database's change time, which no one but the kernel sets; the -wal's
    /// modification time instead, as SQLite running as root chowns the -wal to the
    /// database's owner (a change time of its own) with every connection it opens.
    private func stamps() -> [Stamp?] {
        [(path, false), (path + "-wal", true)].map { file, modified in
            var info = stat()
            guard stat(file, &info) == 0 else { return nil }
            let time = modified ? info.st_mtim : info.st_ctim
            return Stamp(device: UInt64(info.st_dev), inode: UInt64(info.st_ino), size: Int64(info.st_size),
                         changedSeconds: time.tv_sec, changedNanoseconds: time.tv_nsec)
        }
    }
}
