// SQLite's own check of the keychain file (PRAGMA integrity_check): what tells a file
// damaged on disk from an older copy put back, which is whole. The record's digest
// (ItemStore+Generation) covers the rows, not the pages and indexes around them: an
// index that lost or changed an entry passes it, and then a find misses an item that
// is there and the unique index lets its twin in. So every open runs this check before
// it opens the store for writing (KeychainVerification), and fsck too, read only and
// making no file beside it (UntouchedReading). Not quick_check, which skips comparing
// each index with its table and passes such an index; the full check costs a few
// milliseconds for 1000 items, next to the record check's scan of every row. Its
// lines name pages, rows and indexes, never a value.
import Foundation
import GRDB

/// The keychain file fails SQLite's integrity check, or SQLite says it is no database.
public struct KeychainDamage: Error, CustomStringConvertible {
    public let path: String
    /// What SQLite reports, at most `KeychainIntegrity.reported` lines.
    public let problems: [String]

    public var description: String {
        "the keychain \(path) is damaged (SQLite's integrity check: \(problems.joined(separator: "; ")))"
    }
}

public enum KeychainIntegrity {
    /// The most lines reported: the first name the damage, and one torn page can give
    /// thousands.
    static let reported = 5

    /// The damage SQLite finds in the keychain at `path`, or nil: none, or a file that
    /// cannot be read for another reason (missing, not readable), which is no damage.
    public static func damage(at path: String) -> KeychainDamage? {
        do {
            let queue = try UntouchedReading.open(path)
            return try queue.read { try damage(in: $0, path: path) }
        } catch let error as DatabaseError where isDamage(error) {
            return KeychainDamage(path: path, problems: [error.message ?? "\(error.resultCode)"])
        } catch {
            return nil
        }
    }

    /// The damage SQLite finds in the keychain `db` has open (at `path`), or nil; throws
    /// when the check cannot run for another reason.
    static func damage(in db: Database, path: String) throws -> KeychainDamage? {
        do {
            let rows = try String.fetchAll(db, sql: "PRAGMA integrity_check(\(reported))")
            guard rows != ["ok"] else { return nil }
            // A row may hold several lines, under a heading that names the schema
            // ("*** in database main ***"): one problem a line, for a one-line message.
            let problems = rows.flatMap { $0.split(separator: "\n").map(String.init) }.filter { !$0.hasPrefix("***") }
            return KeychainDamage(path: path, problems: Array(problems.prefix(reported)))
        } catch let error as DatabaseError where isDamage(error) {
            return KeychainDamage(path: path, problems: [error.message ?? "\(error.resultCode)"])
        }
    }

    /// SQLite's own word for a file that is not what it should be. A damaged cell can
    /// also claim a payload larger than any value SQLite takes (SQLITE_TOOBIG, "string
    /// or blob too big"), which no keychain row comes near (ItemSizeLimits).
    static func isDamage(_ error: DatabaseError) -> Bool {
        [.SQLITE_CORRUPT, .SQLITE_NOTADB, .SQLITE_TOOBIG].contains(error.resultCode.primaryResultCode)
    }
}
