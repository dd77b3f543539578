// A received version the keychain holds and the state file does not record (the
// daemon died, or the exchange failed, after the pull wrote it): the scan records it
// as the pull would have, the other device's version and not pending, never as a
// change made here. The pull that follows reads its record again (the state's last
// sequence did not move past it) and settles it.
import ItemStore

extension ReceivedSyncVersion {
    /// Whether this version explains the item as the scan finds it: present with this
    /// date, or gone by this deletion. Anything else was changed here after it came.
    func explains(present modified: Double?) -> Bool {
        guard let modified else { return deleted }
        return !deleted && modified == self.modified
    }

    /// The entry the pull made when it wrote this version.
    func entry(identity: String) -> SyncState.Entry {
        SyncState.Entry(modified: modified, deleted: deleted, writer: writer, pending: false, identity: identity, sequence: nil)
    }
}
