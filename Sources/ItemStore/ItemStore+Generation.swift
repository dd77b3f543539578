// The item store's state (dpfs(5)): a generation, a row of the `meta` table bumped in
// the same transaction as every write, and a digest of every row of every table. Both
// are recorded in the device's record in the secret store, with the state they
// replace, before the transaction commits (RowSetDigest makes that digest cost a
// write what it changes): a crash between leaves the database at the
// state before, which the record still names. An open accepts the database only in
// one of those two states. An older copy, with its counter edited or not, and a
// deleted row put back into the current one, hash to neither and are refused: the set
// of items is bound to what the secret store keeps, not to a number beside the rows.
import DPFSProtocol
import DataProtection
import GRDB
import Synchronization

extension ItemStore {
    /// Runs `body` in one write transaction that also bumps the generation, and records
    /// the new state in the secret store before it commits.
    func commit<T>(_ body: (Database) throws -> T) throws -> T {
        try Self.commit(pool, device, ledger, body)
    }

    static func commit<T>(_ pool: DatabasePool, _ device: LockStateManager, _ ledger: KeychainLedger,
                          _ body: (Database) throws -> T) throws -> T {
        var recorded: (before: KeychainState, after: KeychainState)?
        do {
            let result = try pool.writeWithoutTransaction { db -> T in
                // Under the writer's lock: the files as the last write left them, or vouched for.
                if try ledger.files.differ() { try ledger.files.verify(device: device) }
                var outcome: T?
                try db.inTransaction {
                    var digest = try ledger.take(db)
                    let before = try state(db, digest)
                    outcome = try body(db)
                    try db.execute(sql: "UPDATE meta SET value = value + 1 WHERE key = 'generation'")
                    try digest.update(ledger.changes.take(), from: db)
                    let after = try state(db, digest)
                    try device.recordKeychainState(after, replacing: before)
                    recorded = (before, after)
                    ledger.keep(digest)
                    return .commit
                }
                ledger.files.noteOwnWrite()
                guard let outcome else { throw ItemStoreError("the keychain write ended without a result") }
                return outcome
            }
            // Committed: the state before is no longer one a crash can leave, so a copy
            // taken before this write is refused from now on, not only after the
            // daemon's clean end. A later write's record in between is left alone
            // (settleKeychainRecord compares), and a settle that fails only leaves the
            // window a crash would have.
            if let recorded { try? device.settleKeychainRecord(at: recorded.after) }
            return result
        } catch {
            // The kept digest may be ahead of the database now: the next write scans.
            ledger.forget()
            // Recorded, then the commit failed: the database is at the state before, or
            // (a commit that reached the disk and reported an error) at the new one. The
            // record names the one before and keeps the new one acceptable.
            if let recorded { try? device.recordKeychainState(recorded.before, replacing: recorded.after) }
            throw error
        }
    }

    /// The generation and a digest of the rows of `items` and `apps` (RowSetDigest's
    /// lanes) and of every row of `meta`.
    static func state(_ db: Database, _ digest: RowSetDigest) throws -> KeychainState {
        var hash = StreamingHash(outputLength: 16)
        hash.update(Array("dpfs.keychain-state.v2".utf8))
        digest.lanes.withUnsafeBytes { hash.update($0) }
        let rows = try Row.fetchCursor(db, sql: "SELECT * FROM meta ORDER BY key")
        while let row = try rows.next() {
            hash.update(row.count)
            for value in row.databaseValues { RowSetDigest.add(value, to: &hash) }
        }
        return KeychainState(generation: try generation(db), digest: Hex.encode(hash.finish()))
    }

    /// The state of the whole database, scanned.
    static func scannedState(_ db: Database) throws -> (KeychainState, RowSetDigest) {
        let digest = try RowSetDigest(scanning: db)
        return (try state(db, digest), digest)
    }

    /// Checks the database against the device's record (at open and by fsck). A record
    /// of the first digest format (every row hashed in order) is accepted once, when
    /// the database matches it, and recorded again in this one.
    static func check(_ db: Database, device: LockStateManager) throws -> RowSetDigest {
        let (found, digest) = try scannedState(db)
        do {
            try device.checkKeychainState(found)
        } catch DeviceRecordError.keychainAltered(let store, let generation, let recorded) {
            let legacy = try legacyState(db)
            guard (try? device.checkKeychainState(legacy)) != nil else {
                throw DeviceRecordError.keychainAltered(store: store, found: generation, recorded: recorded)
            }
            try device.recordKeychainState(found, replacing: legacy)
            try device.settleKeychainRecord(at: found)
        }
        return digest
    }

    /// The first format's digest: every row of `items`, `apps` and `meta` in key order.
    static func legacyState(_ db: Database) throws -> KeychainState {
        var hash = StreamingHash(outputLength: 16)
        hash.update(Array("dpfs.keychain-state.v1".utf8))
        for (table, order) in [("items", "id"), ("apps", "bundleID"), ("meta", "key")] {
            hash.update(Array(table.utf8))
            let rows = try Row.fetchCursor(db, sql: "SELECT * FROM \(table) ORDER BY \(order)")
            while let row = try rows.next() {
                hash.update(row.count)
                for value in row.databaseValues { RowSetDigest.add(value, to: &hash) }
            }
            hash.update(-1)
        }
        return KeychainState(generation: try generation(db), digest: Hex.encode(hash.finish()))
    }

    /// Clears the record's state before the last write (LockStateManager's
    /// settleKeychainRecord), at the daemon's end: under the store's write lock, so a
    /// write still running either committed first or waits.
    public func settle() throws {
        try pool.barrierWriteWithoutTransaction { db in
            let digest = try ledger.take(db)
            defer { ledger.keep(digest) }
            try device.settleKeychainRecord(at: try Self.state(db, digest))
        }
    }

    static func generation(_ db: Database) throws -> Int {
        try Int.fetchOne(db, sql: "SELECT value FROM meta WHERE key = 'generation'") ?? 0
    }

    /// The generation now: it moves on at every write (an app's, or keychain sync's own),
    /// so a reader that saw it unmoved knows the items are as it last read them.
    public func currentGeneration() throws -> Int {
        try pool.read { db in try Self.generation(db) }
    }

    /// Checks the database at `path` against the device's record (fsck): throws the
    /// one-line refusal for an old or altered copy.
    public static func checkGeneration(path: String, device: LockStateManager) throws {
        let queue = try UntouchedReading.open(path)
        try queue.read { db in
            if try db.tableExists("meta") {
                _ = try check(db, device: device)
            } else {
                try device.checkKeychainState(KeychainState(generation: 0, digest: ""))
            }
        }
    }
}

/// The row-set digest kept between writes, so that a write costs what it changes: taken
/// by the write that updates it and kept again when that write has been recorded; a
/// write that fails leaves none, and the next one scans the database.
final class KeychainLedger: Sendable {
    let changes = ChangedRows()
    /// The files the kept digest describes, as the last write left them.
    let files: KeychainFileWatch
    private let digest = Mutex<RowSetDigest?>(nil)

    init(path: String) { files = KeychainFileWatch(path: path) }

    /// Notes the rows each write of `pool` changes, from now on.
    func watch(_ pool: DatabasePool) {
        pool.add(transactionObserver: changes, extent: .databaseLifetime)
    }

    /// The digest of the database as `db` (a write) sees it; the caller keeps it again.
    func take(_ db: Database) throws -> RowSetDigest {
        _ = changes.take()
        if let kept = digest.withLock({ kept -> RowSetDigest? in
            // Moved out, not copied, so that the write updates it in place.
            defer { kept = nil }
            return kept
        }) {
            return kept
        }
        return try RowSetDigest(scanning: db)
    }

    func keep(_ current: RowSetDigest) { digest.withLock { $0 = current } }
    func forget() { digest.withLock { $0 = nil } }
}
