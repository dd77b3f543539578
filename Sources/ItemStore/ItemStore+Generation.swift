// The item store's state (dpfs(5)): a generation, a row of the `meta` table bumped in
// the same transaction as every write, and a digest of every row of every table. Both
// are recorded in the device's record in the secret store, with the state they
// replace, before the transaction commits: a crash between leaves the database at the
// state before, which the record still names. An open accepts the database only in
// one of those two states. An older copy, with its counter edited or not, and a
// deleted row put back into the current one, hash to neither and are refused: the set
// of items is bound to what the secret store keeps, not to a number beside the rows.
import DataProtection
import GRDB

extension ItemStore {
    /// Runs `body` in one write transaction that also bumps the generation, and records
    /// the new state in the secret store before it commits.
    func commit<T>(_ body: (Database) throws -> T) throws -> T {
        try Self.commit(pool, device, body)
    }

    static func commit<T>(_ pool: DatabasePool, _ device: LockStateManager, _ body: (Database) throws -> T) throws -> T {
        var recorded: (before: KeychainState, after: KeychainState)?
        do {
            return try pool.write { db -> T in
                let before = try state(db)
                let result = try body(db)
                try db.execute(sql: "UPDATE meta SET value = value + 1 WHERE key = 'generation'")
                let after = try state(db)
                try device.recordKeychainState(after, replacing: before)
                recorded = (before, after)
                return result
            }
        } catch {
            // Recorded, then the commit failed: the database is at the state before, or
            // (a commit that reached the disk and reported an error) at the new one. The
            // record names the one before and keeps the new one acceptable.
            if let recorded { try? device.recordKeychainState(recorded.before, replacing: recorded.after) }
            throw error
        }
    }

    /// The generation and the digest of every row of `items`, `apps` and `meta`, in
    /// key order: each value tagged with its type and length, so that no two
    /// different tables hash alike.
    static func state(_ db: Database) throws -> KeychainState {
        var hash = StreamingHash(outputLength: 16)
        hash.update(Array("dpfs.keychain-state.v1".utf8))
        for (table, order) in [("items", "id"), ("apps", "bundleID"), ("meta", "key")] {
            hash.update(Array(table.utf8))
            let rows = try Row.fetchCursor(db, sql: "SELECT * FROM \(table) ORDER BY \(order)")
            while let row = try rows.next() {
                hash.update(row.count)
                for value in row.databaseValues { add(value, to: &hash) }
            }
            hash.update(-1)
        }
        return KeychainState(generation: try generation(db), digest: Hex.encode(hash.finish()))
    }

    private static func add(_ value: DatabaseValue, to hash: inout StreamingHash) {
        switch value.storage {
        case .null:
            hash.update(0)
        case .int64(let number):
            hash.update(1)
            hash.update(Int(number))
        case .double(let number):
            hash.update(2)
            hash.update(Int(bitPattern: UInt(number.bitPattern)))
        case .string(let text):
            hash.update(3)
            let bytes = Array(text.utf8)
            hash.update(bytes.count)
            hash.update(bytes)
        case .blob(let data):
            hash.update(4)
            hash.update(data.count)
            data.withUnsafeBytes { hash.update($0) }
        }
    }

    /// Clears the record's state before the last write (LockStateManager's
    /// settleKeychainRecord), at the daemon's end: under the store's write lock, so a
    /// write still running either committed first or waits.
    public func settle() throws {
        try pool.barrierWriteWithoutTransaction { db in
            try device.settleKeychainRecord(at: try Self.state(db))
        }
    }

    static func generation(_ db: Database) throws -> Int {
        try Int.fetchOne(db, sql: "SELECT value FROM meta WHERE key = 'generation'") ?? 0
    }

    /// Checks the database at `path` against the device's record (fsck): throws the
    /// one-line refusal for an old or altered copy.
    public static func checkGeneration(path: String, device: LockStateManager) throws {
        let queue = try DatabaseQueue(path: path, configuration: {
            var configuration = Configuration()
            configuration.readonly = true
            return configuration
        }())
        let found = try queue.read { db in
            try db.tableExists("meta") ? try state(db) : KeychainState(generation: 0, digest: "")
        }
        try device.checkKeychainState(found)
    }
}
