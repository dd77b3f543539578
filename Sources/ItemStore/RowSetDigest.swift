// A digest of a set of rows that a write updates in time proportional to the rows it
// changes, not to the store's size (LtHash, Bellare–Micciancio's additive hashing
// over a lattice): each row hashes to 32 bytes, expanded by ChaCha20 to 1024 16-bit
// lanes, and the set's digest is the lane-wise sum, modulo 2^16. Adding a row adds its
// lanes, removing subtracts them. Finding another set with the same sum is a short-
// vector problem in a lattice of dimension 1024, so even an attacker who can compute
// every row's hash (one who holds the device secret) cannot forge one.
import DataProtection
import GRDB

struct RowKey: Hashable, Sendable {
    let table: String
    let rowID: Int64
}

struct RowSetDigest: Sendable {
    static let laneCount = 1024
    /// The tables whose rows it covers; `meta` (the generation) is hashed whole.
    static let tables = ["items", "apps", "sync_received"]

    private(set) var lanes = [UInt16](repeating: 0, count: laneCount)
    /// Each row's 32-byte hash, to subtract its lanes when it changes or goes.
    private var rows: [RowKey: [UInt8]] = [:]

    /// The digest of every row of `tables` in `db`.
    init(scanning db: Database) throws {
        for table in Self.tables {
            let cursor = try Row.fetchCursor(db, sql: "SELECT rowid, * FROM \(table)")
            while let row = try cursor.next() { insert(RowKey(table: table, rowID: row[0]), hash: Self.hash(table, row)) }
        }
    }

    /// Brings the digest up to date with the rows `changed` now hold in `db` (a row
    /// that is gone only leaves).
    mutating func update(_ changed: Set<RowKey>, from db: Database) throws {
        for key in changed {
            remove(key)
            if let row = try Row.fetchOne(db, sql: "SELECT rowid, * FROM \(key.table) WHERE rowid = ?", arguments: [key.rowID]) {
                insert(key, hash: Self.hash(key.table, row))
            }
        }
    }

    private mutating func insert(_ key: RowKey, hash: [UInt8]) {
        rows[key] = hash
        add(hash, negated: false)
    }

    private mutating func remove(_ key: RowKey) {
        guard let hash = rows.removeValue(forKey: key) else { return }
        add(hash, negated: true)
    }

    private mutating func add(_ hash: [UInt8], negated: Bool) {
        var expanded = [UInt16](repeating: 0, count: Self.laneCount)
        expanded.withUnsafeMutableBytes { output in hash.withUnsafeBytes { Sodium.keystream(key: $0, into: output) } }
        for index in 0..<Self.laneCount {
            let lane = UInt16(littleEndian: expanded[index])
            lanes[index] = negated ? lanes[index] &- lane : lanes[index] &+ lane
        }
    }

    /// A row's hash: its table and every value after the rowid (column 0), each tagged
    /// with its type and length.
    private static func hash(_ table: String, _ row: Row) -> [UInt8] {
        var hash = StreamingHash(outputLength: 32)
        hash.update(Array("dpfs.keychain-row.v2".utf8))
        hash.update(Array(table.utf8))
        let values = Array(row.databaseValues.dropFirst())
        hash.update(values.count)
        for value in values { add(value, to: &hash) }
        return hash.finish()
    }

    static func add(_ value: DatabaseValue, to hash: inout StreamingHash) {
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
}

/// The rows of the digested tables that the current write transaction changed, as
/// SQLite's update hook reports them (GRDB turns off the truncate optimisation, which
/// would skip the hook, for tables observed for deletions).
final class ChangedRows: TransactionObserver, @unchecked Sendable {
    // @unchecked: used only on the pool's writer connection, one transaction at a time.
    private var changed: Set<RowKey> = []

    func observes(eventsOfKind eventKind: DatabaseEventKind) -> Bool {
        RowSetDigest.tables.contains(eventKind.tableName)
    }

    func databaseDidChange(with event: DatabaseEvent) {
        changed.insert(RowKey(table: event.tableName, rowID: event.rowID))
    }

    func databaseDidCommit(_ db: Database) { changed.removeAll() }
    func databaseDidRollback(_ db: Database) { changed.removeAll() }

    /// The rows changed so far in this transaction, forgotten as they are taken.
    func take() -> Set<RowKey> {
        defer { changed.removeAll() }
        return changed
    }
}
