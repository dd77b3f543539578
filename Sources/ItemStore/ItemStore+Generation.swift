// The item store's generation (dpfs(5)): a row of the `meta` table bumped in the same
// transaction as every write, then mirrored into the device's record in the secret
// store. The mirror comes after the commit, so a crash between leaves the record one
// behind, never ahead; an open accepts the database at the record's generation or
// above and brings the record up. A caller hears of a write's success only after the
// mirror, so the one write a kill in between could let an old copy undo is a write
// nobody was told had happened. A database older than the record is refused.
import DataProtection
import GRDB

extension ItemStore {
    /// Runs `body` in one write transaction that also bumps the generation, then
    /// mirrors the generation into the secret store.
    func commit<T>(_ body: (Database) throws -> T) throws -> T {
        try Self.commit(pool, device, body)
    }

    static func commit<T>(_ pool: DatabasePool, _ device: LockStateManager, _ body: (Database) throws -> T) throws -> T {
        var committed = 0
        let result = try pool.write { db -> T in
            let result = try body(db)
            try db.execute(sql: "UPDATE meta SET value = value + 1 WHERE key = 'generation'")
            committed = try Self.generation(db)
            return result
        }
        try device.recordKeychainGeneration(committed)
        return result
    }

    static func generation(_ db: Database) throws -> Int {
        try Int.fetchOne(db, sql: "SELECT value FROM meta WHERE key = 'generation'") ?? 0
    }

    /// Checks the database at `path` against the device's record without changing it
    /// (fsck): throws the one-line refusal for an old copy.
    public static func checkGeneration(path: String, device: LockStateManager) throws {
        let queue = try DatabaseQueue(path: path, configuration: {
            var configuration = Configuration()
            configuration.readonly = true
            return configuration
        }())
        let found = try queue.read { db in
            try db.tableExists("meta") ? try generation(db) : 0
        }
        try device.checkKeychainGeneration(found)
    }
}
