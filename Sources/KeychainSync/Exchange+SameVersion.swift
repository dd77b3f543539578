// Whether a pulled record is the version this device already holds under another
// writer's name: two devices that hold the same item with the same dates (one restored
// from the other's backup) tie on the date, and the writer id alone would have one of
// them send, and every other member rewrite, an item nobody changed.
import DataProtection
import ItemStore

extension Exchange {
    /// True when `remote` and this device's item (or tombstone, `local`) are the same:
    /// both deletions, or every attribute the record carries and the secret equal.
    func holdsSameVersion(_ remote: RecordPlaintext, recordID: String, _ local: SyncState.Entry) -> Bool {
        guard local.deleted == remote.deleted else { return false }
        if remote.deleted { return true }
        guard let remoteSecret = remote.secret,
              let identity = SyncState.openIdentity(local.identity, recordID: recordID, crypto: crypto),
              // Locked out of its class, or damaged: not known to be the same, so the tie decides.
              let item = (try? engine.items.synchronizedItem(identity: identity)) ?? nil,
              item.attributes == remote.attributes else { return false }
        return withExtendedLifetime((item.secret, remoteSecret)) {
            Sodium.equal(item.secret.bytes, remoteSecret.bytes)
        }
    }
}
