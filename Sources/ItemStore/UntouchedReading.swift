// Reading the keychain file without changing it or what lies beside it. A mount's
// checks may refuse the keychain (an old copy put back, a damaged file), and a refused
// mount must leave the device directory as it found it: the copy is the user's, and
// evidence of a rollback. Opening the store's pool writes even when nothing is asked
// of it (WAL mode, GRDB's table made and dropped to start the -wal, migrations), and
// a plain read-only connection to a WAL database still makes a -wal and a -shm and
// leaves them. So the checks read through this first.
import CSQLiteConfig
import Foundation
import Glibc
import GRDB

enum UntouchedReading {
    /// A read-only connection to the database at `path` that makes, changes and
    /// deletes no file. With no -wal beside it that holds anything, the file alone is
    /// the whole database, opened as immutable (no locks, no -shm). A -wal left by a
    /// crash holds committed transactions that only a WAL reader sees: `walReader`
    /// reads them, the -shm left alone. A hot -journal is refused (`HotJournal`).
    static func open(_ path: String) throws -> DatabaseQueue {
        // SQLite would say "unable to open database file", naming no file and no reason.
        guard access(path, R_OK) == 0 else {
            throw ItemStoreError("cannot open the item store \(path): \(String(cString: strerror(errno)))")
        }
        // SQLite deletes the -wal or -journal of an empty file as it opens it, then
        // reads an empty database: what immutable reads, and what the store's open finds.
        guard holdsAnything(path) else { return try DatabaseQueue(path: uri(path, "immutable=1"), configuration: readOnly) }
        if HotJournal.isHot(path + "-journal") { throw HotJournal(path: path) }
        if holdsAnything(path + "-wal") { return try walReader(path, readOnly) }
        return try DatabaseQueue(path: uri(path, "immutable=1"), configuration: readOnly)
    }

    private static var readOnly: Configuration {
        var configuration = Configuration()
        configuration.readonly = true
        return configuration
    }

    /// A reader of the file and its -wal that keeps the WAL's index in heap memory, so
    /// that it neither makes a -shm nor writes one it finds (a read-only connection
    /// makes it when it is missing, and the first to open one rewrites it). SQLite keeps
    /// the index in memory for a connection in EXCLUSIVE locking mode before its first
    /// read; that mode takes a write lock on the file, which a read-only descriptor
    /// cannot hold, so the connection takes no lock at all (the unix-none VFS): the
    /// daemon holds the mount lock, and fsck runs on an unmounted device. It closes
    /// without the checkpoint a last connection runs, which would move the -wal's pages
    /// into the file and delete the -wal.
    private static func walReader(_ path: String, _ configuration: Configuration) throws -> DatabaseQueue {
        var configuration = configuration
        configuration.prepareDatabase { db in
            guard let connection = db.sqliteConnection, dpfs_sqlite3_no_checkpoint_on_close(connection) else {
                throw ItemStoreError("cannot read the item store \(path): SQLite would checkpoint its -wal at close")
            }
            guard try String.fetchOne(db, sql: "PRAGMA locking_mode = EXCLUSIVE") == "exclusive" else {
                throw ItemStoreError("cannot read the item store \(path): SQLite would make its -shm")
            }
        }
        return try DatabaseQueue(path: uri(path, "vfs=unix-none"), configuration: configuration)
    }

    private static func holdsAnything(_ path: String) -> Bool {
        var info = stat()
        return stat(path, &info) == 0 && info.st_size > 0
    }

    /// SQLite's URI for `path` with `parameter`; a path's %, ? and # would otherwise be
    /// read as the URI's own.
    static func uri(_ path: String, _ parameter: String) -> String {
        var allowed = CharacterSet.urlPathAllowed
        allowed.remove(charactersIn: "%?#")
        let escaped = path.addingPercentEncoding(withAllowedCharacters: allowed) ?? path
        return "file:\(escaped)?\(parameter)"
    }
}
