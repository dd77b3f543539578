// A new key epoch after a device left (docs/security.md "Keychain sync"): in one
// transaction that holds the account's row, a remaining member draws a new account
// key, wraps it to each member it can verify (endorsed under the current key, and
// already a member before the leave as far as this device saw) with
// that member's X25519 public key, endorses them again under the new key, re-seals
// every record under it with new sequences (so every member pulls them; numbered from
// the server's clock as a push numbers them, ServerSchema.nextSequence), drops the
// old epoch's keys and the outstanding invitations (they carry the old key), and
// NOTIFYs. The device that left holds only the old key: nothing sealed from now on
// opens with it.
import DataProtection

struct Rotation {
    let crypto: AccountCrypto
    let deviceID: String
    /// The members this device saw before the leave (nil: none recorded, then every
    /// endorsed member).
    let roster: Set<String>?

    func run(_ connection: PostgresConnection) throws {
        let accountID = crypto.accountID
        try connection.transaction {
            let account = try connection.execute(
                "SELECT epoch, rotate, GREATEST(seq, \(ServerSchema.clock)) FROM dpfs_sync_accounts WHERE account_id = $1 FOR UPDATE", [.text(accountID)])
            // Another member rotated first.
            guard account.count == 1, account.int(0, 0) == crypto.epoch, account.bool(0, 1) == true,
                  var sequence = account.int(0, 2) else { return }
            let next = crypto.rotated()
            let members = try connection.execute(
                "SELECT device_id, public_key, endorsement FROM dpfs_sync_members WHERE account_id = $1", [.text(accountID)])
            let keyPair = next.keyPair()
            for row in 0..<members.count {
                guard let device = members.text(row, 0), let publicKey = members.bytes(row, 1),
                      let endorsement = members.bytes(row, 2) else { continue }
                guard publicKey.count == SealedBox.publicKeySize, roster?.contains(device) ?? true,
                      crypto.endorses(deviceID: device, publicKey: publicKey, endorsement: endorsement) else {
                    // Not endorsed by the account, or new since the leave: no key for it,
                    // and no place in it (a device that joined in that moment joins again).
                    try connection.execute("DELETE FROM dpfs_sync_members WHERE account_id = $1 AND device_id = $2",
                                           [.text(accountID), .text(device)])
                    continue
                }
                try connection.execute(
                    "INSERT INTO dpfs_sync_keys (account_id, epoch, device_id, wrapped) VALUES ($1, $2, $3, $4)",
                    [.text(accountID), .int(next.epoch), .text(device), .bytes(SealedBox.seal(keyPair, to: publicKey))])
                try connection.execute(
                    "UPDATE dpfs_sync_members SET endorsement = $3 WHERE account_id = $1 AND device_id = $2",
                    [.text(accountID), .text(device), .bytes(next.endorsement(deviceID: device, publicKey: publicKey))])
            }
            // A payload larger than any record is not fetched: it goes as one that does not open.
            let records = try connection.execute("""
                SELECT record_id, epoch, CASE WHEN octet_length(payload) <= $2 THEN payload END
                FROM dpfs_sync_records WHERE account_id = $1 ORDER BY seq
                """, [.text(accountID), .int(RecordPlaintext.maxSealedSize)])
            for row in 0..<records.count {
                guard let recordID = records.text(row, 0), let epoch = records.int(row, 1), let payload = records.bytes(row, 2),
                      let plaintext = crypto.open(payload, recordID: recordID, epoch: epoch) else {
                    if let recordID = records.text(row, 0) {
                        try connection.execute("DELETE FROM dpfs_sync_records WHERE account_id = $1 AND record_id = $2",
                                               [.text(accountID), .text(recordID)])
                    }
                    continue
                }
                sequence += 1
                try connection.execute(
                    "UPDATE dpfs_sync_records SET epoch = $3, seq = $4, payload = $5 WHERE account_id = $1 AND record_id = $2",
                    [.text(accountID), .text(recordID), .int(next.epoch), .int(sequence),
                     .bytes(next.seal(plaintext, recordID: recordID))])
            }
            try connection.execute("DELETE FROM dpfs_sync_invitations WHERE account_id = $1", [.text(accountID)])
            try connection.execute("DELETE FROM dpfs_sync_keys WHERE account_id = $1 AND epoch < $2",
                                   [.text(accountID), .int(next.epoch)])
            try connection.execute("UPDATE dpfs_sync_accounts SET epoch = $2, rotate = false, seq = $3 WHERE account_id = $1",
                                   [.text(accountID), .int(next.epoch), .int(sequence)])
            try connection.execute("SELECT pg_notify($1, '')", [.text(ServerSchema.channel(accountID))])
        }
    }
}
