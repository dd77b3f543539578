// The versions keychain sync received and wrote to the store that its state file may
// not record yet: each noted in the `sync_received` table in the same transaction as
// the write, and forgotten once the state file records it. A daemon killed between
// the two (or a round whose exchange failed after the write) leaves items changed or
// gone that the state file still lists as they were; sync's next look at the store
// takes those for this device's own changes unless it can tell them apart, and would
// send a received deletion as this device's, dated then, over newer versions made
// elsewhere meanwhile. Nothing else writes the store while the daemon is down, so a
// change this table does not explain is the device's own.
import GRDB

/// A version keychain sync received: its record, date, writer and whether it deletes.
public struct ReceivedSyncVersion: Sendable, Equatable {
    public let recordID: String
    public let modified: Double
    public let deleted: Bool
    public let writer: String

    public init(recordID: String, modified: Double, deleted: Bool, writer: String) {
        self.recordID = recordID; self.modified = modified; self.deleted = deleted; self.writer = writer
    }
}

extension ItemStore {
    /// The received versions not yet forgotten, by record id.
    public func receivedSyncVersions() throws -> [String: ReceivedSyncVersion] {
        try pool.read { db in try Self.receivedSyncVersions(db) }
    }

    /// Forgets every received version, once the state file records them; no write when
    /// there is none. Whether it wrote (and so moved the generation).
    @discardableResult
    public func forgetReceivedSyncVersions() throws -> Bool {
        guard try !receivedSyncVersions().isEmpty else { return false }
        try commit { db in try db.execute(sql: "DELETE FROM sync_received") }
        return true
    }

    /// Notes `version` in the write transaction `db` that applies it.
    func note(_ version: ReceivedSyncVersion, _ db: Database) throws {
        try db.execute(sql: """
            INSERT INTO sync_received (recordID, modified, deleted, writer) VALUES (?, ?, ?, ?)
            ON CONFLICT (recordID) DO UPDATE SET modified = excluded.modified, deleted = excluded.deleted, writer = excluded.writer
            """, arguments: [version.recordID, version.modified, version.deleted ? 1 : 0, version.writer])
    }

    private static func receivedSyncVersions(_ db: Database) throws -> [String: ReceivedSyncVersion] {
        var versions: [String: ReceivedSyncVersion] = [:]
        let rows = try Row.fetchCursor(db, sql: "SELECT recordID, modified, deleted, writer FROM sync_received")
        while let row = try rows.next() {
            let version = ReceivedSyncVersion(recordID: row[0], modified: row[1], deleted: (row[2] as Int64) != 0, writer: row[3])
            versions[version.recordID] = version
        }
        return versions
    }
}
