// One round of exchange with the server (docs/security.md "Keychain sync"):
// - scan: the item store against the state's entries: an item whose modification date
//   differs from its entry, or an entry whose item is gone, becomes a pending version
//   made by this device (a deletion a tombstone, so it does not come back), unless it
//   is a version the pull wrote and the state does not record (ReceivedVersionEntry);
// - a newer epoch on the server: this device's copy of the new key, opened with its
//   X25519 private key; a pending rotation (someone left): made here if nobody has;
// - pull: every record with a sequence above the last one seen, in order, a page at a
//   time (PulledRecords); the later version wins (modification date, then writer id), so every device converges;
// - push: every pending entry, in one transaction that takes the account's next
//   sequences and writes a record only where the server's version is one this device
//   has pulled (else the round pulls again and decides anew), then NOTIFY.
// A server put back from a backup is met at each new connection (or when its sequence
// is below the last one pulled): each record this device saw there at a higher
// sequence, or at all, goes again. Sequences follow the server's clock, so what is
// written after the put-back is above every sequence any member pulled before it.
import DPFSProtocol
import DataProtection
import Foundation
import ItemStore
import Synchronization

struct Exchange {
    let engine: SyncEngine
    var crypto: AccountCrypto
    /// Set when the account no longer lists this device.
    var removed = false
    /// Set when the scan found received versions noted in the keychain: once the state
    /// is saved they are forgotten.
    var foundReceived = false

    init(engine: SyncEngine, crypto: AccountCrypto) {
        self.engine = engine; self.crypto = crypto
    }

    private var items: ItemStore { engine.items }

    // MARK: scan

    mutating func scan(_ state: inout SyncState) throws {
        let now = Date().timeIntervalSince1970
        let received = try items.receivedSyncVersions()
        foundReceived = !received.isEmpty
        var present = Set<String>()
        for version in try items.synchronizableVersions() {
            let recordID = crypto.recordID(of: version.identity)
            present.insert(recordID)
            if let entry = state.entries[recordID], !entry.deleted, entry.modified == version.modified { continue }
            if let noted = received[recordID], noted.explains(present: version.modified) {
                state.entries[recordID] = noted.entry(
                    identity: SyncState.sealIdentity(version.identity, recordID: recordID, crypto: crypto))
                continue
            }
            state.entries[recordID] = SyncState.Entry(
                modified: version.modified, deleted: false, writer: state.deviceID, pending: true,
                identity: SyncState.sealIdentity(version.identity, recordID: recordID, crypto: crypto),
                sequence: state.entries[recordID]?.sequence)
        }
        for (recordID, entry) in state.entries where !entry.deleted && !present.contains(recordID) {
            // A damaged item is still there: neither sent nor deleted on the other devices.
            if let identity = SyncState.openIdentity(entry.identity, recordID: recordID, crypto: crypto),
               try items.holdsSynchronizable(identity: identity) { continue }
            if let noted = received[recordID], noted.explains(present: nil) {
                state.entries[recordID] = noted.entry(identity: entry.identity)
                continue
            }
            var tombstone = entry
            tombstone.deleted = true
            tombstone.modified = max(now, entry.modified)
            tombstone.writer = state.deviceID
            tombstone.pending = true
            state.entries[recordID] = tombstone
        }
    }

    // MARK: the server

    /// Returns true when another round should follow at once (a push met a newer version).
    /// `connected` says the connection is new: the server may have been put back meanwhile.
    mutating func synchronize(_ state: inout SyncState, _ connection: PostgresConnection, connected: Bool) throws -> Bool {
        // One statement, so one snapshot: the members seen while no rotation was due are
        // the roster a rotation may wrap the new key to.
        let account = try connection.execute("""
            SELECT a.epoch, a.rotate, a.seq, m.device_id FROM dpfs_sync_accounts a
            LEFT JOIN dpfs_sync_members m ON m.account_id = a.account_id WHERE a.account_id = $1
            """, [.text(state.accountID)])
        let members = (0..<account.count).compactMap { account.text($0, 3) }
        guard account.count >= 1, let epoch = account.int(0, 0), let sequence = account.int(0, 2),
              members.contains(state.deviceID) else {
            removed = true
            return false
        }
        // Its records are sealed under a key this device no longer holds, and the keys
        // of the later epochs are gone with the server's copy of them.
        guard epoch >= state.epoch else { throw SyncError.serverBeforeRotation(server: epoch, device: state.epoch) }
        if connected || sequence < state.lastSequence { try resendLost(&state, connection) }
        let rotate = account.bool(0, 1) == true
        if epoch > state.epoch {
            guard try takeNewKey(epoch, &state, connection) else { removed = true; return false }
        }
        if rotate, epoch == state.epoch {
            try Rotation(crypto: crypto, deviceID: state.deviceID, roster: state.roster.map(Set.init)).run(connection)
            // The next round takes this device's copy of the new key like any other member.
            return true
        }
        if !rotate { state.roster = members.sorted() }
        engine.shared.withLock { $0.members = members.count }
        // A pull stopped by a locked class leaves newer versions unseen: a push of those
        // records would only meet them again, so the round ends without asking for another.
        let complete = try pull(&state, from: ServerRecords(connection: connection, accountID: state.accountID))
        let conflicted = try push(&state, connection)
        return conflicted && complete
    }

    private mutating func takeNewKey(_ epoch: Int, _ state: inout SyncState, _ connection: PostgresConnection) throws -> Bool {
        let rows = try connection.execute(
            "SELECT wrapped FROM dpfs_sync_keys WHERE account_id = $1 AND epoch = $2 AND device_id = $3",
            [.text(state.accountID), .int(epoch), .text(state.deviceID)])
        guard rows.count == 1, let wrapped = rows.bytes(0, 0), let publicKey = Hex.decode(state.publicKey),
              let privateKey = try SyncState.open(state.sealedPrivateKey, purpose: "device-key", accountID: state.accountID,
                                                  device: engine.device),
              let keyPair = SealedBox.open(wrapped, publicKey: publicKey, privateKey: privateKey),
              let next = AccountCrypto(accountID: state.accountID, epoch: epoch, keyPair: keyPair),
              let sealed = SyncState.seal(keyPair, purpose: "account-keys", accountID: state.accountID, device: engine.device)
        else { return false }
        crypto = next
        state.epoch = epoch
        state.sealedKeys = sealed
        // The rotation re-sealed every record it could open under the new key, with a new
        // sequence, and deleted the rest: what does not open is learnt anew.
        state.forgetUnreadable { _, _ in false }
        state.forgetRefused { _, _ in false }
        return true
    }

    /// Marks pending every record the server holds at a lower sequence than this device
    /// saw there, or not at all: the server was put back from a backup. The pull that
    /// follows settles each (an equal version there is no longer pending); the push
    /// sends the rest, each over the older version, as the server's sequence of it is
    /// below the last one pulled.
    private func resendLost(_ state: inout SyncState, _ connection: PostgresConnection) throws {
        let rows = try connection.execute("SELECT record_id, seq FROM dpfs_sync_records WHERE account_id = $1",
                                          [.text(state.accountID)])
        var held: [String: Int] = [:]
        for row in 0..<rows.count {
            if let recordID = rows.text(row, 0), let sequence = rows.int(row, 1) { held[recordID] = sequence }
        }
        state.forgetUnreadable { held[$0] == $1 }
        state.forgetRefused { held[$0] == $1 }
        var lost = 0
        for (recordID, entry) in state.entries {
            guard let seen = entry.sequence, (held[recordID] ?? 0) < seen else { continue }
            state.entries[recordID]?.pending = true
            state.entries[recordID]?.sequence = nil
            lost += 1
        }
        if lost > 0 {
            engine.logger.notice("keychain sync: the server lacks \(lost) records it held before (put back from a backup?): sending them again")
        }
    }

    /// Returns false when a record waits for its class key (the pull stopped before it).
    /// A page at a time, each from the last sequence taken, until a short page: the
    /// state moves past a record only once it is written (or refused), so a pull cut
    /// short anywhere leaves the cursor at a record the keychain holds.
    func pull(_ state: inout SyncState, from source: some PulledRecordSource, pageSize: Int = Exchange.pageSize) throws -> Bool {
        while true {
            let before = state.lastSequence
            let page = try source.records(after: before, limit: pageSize)
            for record in page {
                guard try take(record, &state) else { return false }
            }
            if page.count < pageSize { return true }
            // A full page that moved nothing would be asked again for ever: a server
            // that answers records at or before the cursor is not the protocol's.
            guard state.lastSequence > before else {
                throw SyncError("the sync server answered a full page of records at or before sequence \(before)")
            }
        }
    }

    /// The most records a pull holds at once: each is at most RecordPlaintext.maxSealedSize,
    /// most are a few hundred bytes.
    static let pageSize = 128

    /// Merges one pulled record; false when it waits for its class key.
    private func take(_ record: PulledRecord, _ state: inout SyncState) throws -> Bool {
        let (recordID, sequence) = (record.recordID, record.sequence)
        guard let payload = record.payload else {
            if state.refused?[recordID] != RefusedRecord(sequence: sequence, size: record.size) {
                engine.logger.warning("""
                    keychain sync: refused record \(recordID) at sequence \(sequence): its payload is \(record.size) \
                    bytes, more than any item's record takes (\(RecordPlaintext.maxSealedSize))
                    """)
            }
            state.markRefused(recordID, RefusedRecord(sequence: sequence, size: record.size))
            state.markUnreadable(recordID, at: nil)
            state.lastSequence = max(state.lastSequence, sequence)
            return true
        }
        var readable = false
        if let opened = crypto.open(payload, recordID: recordID, epoch: record.epoch),
           let remote = RecordPlaintext(decoding: opened) {
            // A class key not in memory stops the pull here; the unlock wakes the engine.
            do {
                readable = try merge(remote, recordID: recordID, &state)
            } catch where ItemStore.isUnavailable(error) {
                return false
            }
            if readable { state.entries[recordID]?.sequence = sequence }
        }
        state.markRefused(recordID, nil)
        state.markUnreadable(recordID, at: readable ? nil : sequence)
        state.lastSequence = max(state.lastSequence, sequence)
        return true
    }

    /// Last writer wins: the later modification date, then the greater writer id.
    /// False when the record names no item this account's id key makes its id from:
    /// it was made under other keys.
    func merge(_ remote: RecordPlaintext, recordID: String, _ state: inout SyncState) throws -> Bool {
        let local = state.entries[recordID]
        if let local {
            if (local.modified, local.writer) == (remote.modified, remote.writer) {
                state.entries[recordID]?.pending = false
                return true
            }
            // Another device's copy of the same version (a restored device joining): taken
            // as known, so that neither side sends or writes it again.
            if local.modified == remote.modified, holdsSameVersion(remote, recordID: recordID, local) {
                state.entries[recordID]?.writer = remote.writer
                state.entries[recordID]?.pending = false
                return true
            }
            if (local.modified, local.writer) > (remote.modified, remote.writer) {
                state.entries[recordID]?.pending = true
                return true
            }
        }
        guard let identity = ItemStore.syncIdentity(of: remote.attributes),
              crypto.recordID(of: identity) == recordID else { return false }
        // The entry is the item as this round's scan saw it; an app may have written it
        // since (this device then made that version). A newer one stays, and goes out
        // at the next round, which that app write asked for. An item deleted since stays
        // deleted: the next scan notices it, and dates the tombstone then, as any delete.
        let scanned = local.flatMap { $0.deleted ? nil : $0.modified }, deviceID = state.deviceID
        let keepsLocal = { (current: Double?) in
            guard let current else { return scanned != nil }
            return current != scanned && (current, deviceID) > (remote.modified, remote.writer)
        }
        let received = ReceivedSyncVersion(recordID: recordID, modified: remote.modified, deleted: remote.deleted,
                                           writer: remote.writer)
        let written: Bool
        if remote.deleted {
            written = try items.removeSynchronized(identity: identity, noting: received, unlessLocal: keepsLocal)
        } else {
            guard let secret = remote.secret else { return false }
            written = try items.applySynchronized(SyncedItem(attributes: remote.attributes, secret: secret), noting: received,
                                                  unlessLocal: keepsLocal)
        }
        if written { engine.ownWrites.add(1, ordering: .relaxed) }
        state.entries[recordID] = SyncState.Entry(modified: remote.modified, deleted: remote.deleted, writer: remote.writer,
                                                  pending: false,
                                                  identity: SyncState.sealIdentity(identity, recordID: recordID, crypto: crypto),
                                                  sequence: nil)
        return true
    }

    private func push(_ state: inout SyncState, _ connection: PostgresConnection) throws -> Bool {
        var outgoing: [(recordID: String, payload: [UInt8])] = []
        for (recordID, entry) in state.entries where entry.pending {
            guard let identity = SyncState.openIdentity(entry.identity, recordID: recordID, crypto: crypto) else { continue }
            var plaintext: RecordPlaintext
            if entry.deleted {
                plaintext = RecordPlaintext(attributes: [:], deleted: true, writer: entry.writer, secret: nil)
                plaintext.attributes = tombstoneAttributes(identity)
                plaintext.attributes["modified"] = String(entry.modified)
            } else {
                // Locked out of its class now: it goes after the unlock.
                guard let item = try? items.synchronizedItem(identity: identity) else { continue }
                plaintext = RecordPlaintext(attributes: item.attributes, deleted: false, writer: entry.writer, secret: item.secret)
                guard item.modified == entry.modified else { continue }
            }
            outgoing.append((recordID, crypto.seal(plaintext.encoded(), recordID: recordID)))
        }
        guard !outgoing.isEmpty else { return false }
        let accountID = state.accountID, epoch = crypto.epoch, seen = state.lastSequence
        // A record whose server version this device has not pulled stays pending alone
        // (its savepoint rolled back): the others go. A pull stopped by a class locked
        // here (a received WhenUnlocked record) then holds back only the records it
        // overlaps, not every change this device makes until its unlock.
        let sent: [(recordID: String, sequence: Int)]? = try connection.transaction(catchConflict: nil) {
            var sent: [(recordID: String, sequence: Int)] = []
            for record in outgoing {
                try connection.execute("SAVEPOINT push_record")
                let sequence = try connection.execute(
                    "UPDATE dpfs_sync_accounts SET seq = \(ServerSchema.nextSequence) WHERE account_id = $1 AND epoch = $2 RETURNING seq",
                    [.text(accountID), .int(epoch)])
                // The account moved to a new epoch: nothing goes under the old key.
                guard sequence.count == 1, let next = sequence.int(0, 0) else { throw Conflict() }
                let written = try connection.execute("""
                    INSERT INTO dpfs_sync_records (account_id, record_id, epoch, seq, payload) VALUES ($1, $2, $3, $4, $5)
                    ON CONFLICT (account_id, record_id) DO UPDATE
                    SET epoch = EXCLUDED.epoch, seq = EXCLUDED.seq, payload = EXCLUDED.payload
                    WHERE dpfs_sync_records.seq <= $6
                    """, [.text(accountID), .text(record.recordID), .int(epoch), .int(next), .bytes(record.payload), .int(seen)])
                if written.changed == 1 {
                    try connection.execute("RELEASE SAVEPOINT push_record")
                    sent.append((record.recordID, next))
                } else {
                    try connection.execute("ROLLBACK TO SAVEPOINT push_record")
                }
            }
            if !sent.isEmpty { try connection.execute("SELECT pg_notify($1, '')", [.text(ServerSchema.channel(accountID))]) }
            return sent
        }
        guard let sent else { return true }
        for record in sent {
            state.entries[record.recordID]?.pending = false
            state.entries[record.recordID]?.sequence = record.sequence
        }
        return sent.count < outgoing.count
    }

    private func tombstoneAttributes(_ identity: [UInt8]) -> [String: String] {
        // The identity's fields (a receiver that lost its entry still finds the item):
        // tag, class, then name/value pairs, then the access group.
        guard let fields = identity.withUnsafeBytes({ LengthPrefixed.fields($0)?.map(LengthPrefixed.text) }),
              fields.count >= 3 else { return [:] }
        var attributes = ["class": fields[1], "accessGroup": fields[fields.count - 1]]
        var index = 2
        while index + 1 < fields.count - 1 {
            attributes[fields[index]] = fields[index + 1]
            index += 2
        }
        return attributes
    }
}

/// A push met a version this device has not pulled, or a rotation: rolled back, pulled anew.
struct Conflict: Error {}

extension PostgresConnection {
    /// `transaction`, answering `conflicted` when the body threw Conflict.
    func transaction<T>(catchConflict conflicted: T, _ body: () throws -> T) throws -> T {
        do {
            return try transaction(body)
        } catch is Conflict {
            return conflicted
        }
    }
}
