// Reading the keychain file without changing it or what lies beside it. A mount's
// checks may refuse the keychain (an old copy put back, a damaged file), and a refused
// mount must leave the device directory as it found it: the copy is the user's, and
// evidence of a rollback. Opening the store's pool writes even when nothing is asked
// of it (WAL mode, GRDB's table made and dropped to start the -wal, migrations), and
// a plain read-only connection to a WAL database still makes a -wal and a -shm and
// leaves them. So the checks read through this first.
import Foundation
import Glibc
import GRDB

enum UntouchedReading {
    /// A read-only connection to the database at `path` that makes no file: with no
    /// -wal or -journal beside it that holds anything, the file alone is the whole
    /// database, opened as immutable (no locks, no -shm). A -wal left by a crash
    /// holds committed transactions that only a WAL reader sees; it comes with the
    /// -shm SQLite made beside it, which this reader uses.
    static func open(_ path: String) throws -> DatabaseQueue {
        // SQLite would say "unable to open database file", naming no file and no reason.
        guard access(path, R_OK) == 0 else {
            throw ItemStoreError("cannot open the item store \(path): \(String(cString: strerror(errno)))")
        }
        var configuration = Configuration()
        configuration.readonly = true
        if ["-wal", "-journal"].contains(where: { holdsAnything(path + $0) }) {
            return try DatabaseQueue(path: path, configuration: configuration)
        }
        return try DatabaseQueue(path: immutableURI(path), configuration: configuration)
    }

    private static func holdsAnything(_ path: String) -> Bool {
        var info = stat()
        return stat(path, &info) == 0 && info.st_size > 0
    }

    /// SQLite's URI for `path` opened immutable; a path's %, ? and # would otherwise
    /// be read as the URI's own.
    static func immutableURI(_ path: String) -> String {
        var allowed = CharacterSet.urlPathAllowed
        allowed.remove(charactersIn: "%?#")
        let escaped = path.addingPercentEncoding(withAllowedCharacters: allowed) ?? path
        return "file:\(escaped)?immutable=1"
    }
}
