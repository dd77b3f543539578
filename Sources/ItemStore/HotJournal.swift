// A rollback journal beside the keychain that a cut-short write left: SQLite's first
// connection plays it back into the database file and deletes it, and a read-only one
// fails (SQLITE_READONLY_ROLLBACK, "attempt to write a readonly database"). dpfs
// writes the keychain in WAL mode, so such a journal comes from another program that
// wrote it in rollback mode (sqlite3). The checks that may refuse the keychain read it
// only without changing it (UntouchedReading), and the state the journal's playback
// leaves cannot be read that way: the keychain is refused, with what to do, before
// anything opens it.
import Glibc

public struct HotJournal: Error, CustomStringConvertible {
    /// The keychain's database file; its journal is `path`-journal.
    public let path: String

    public var description: String {
        "the keychain \(path) has a hot journal, \(path)-journal: a write by another program (in rollback "
            + "mode; dpfs writes in WAL mode) was cut short, and reading the keychain would roll it back, "
            + "changing the file; keep a copy of both if you need them as they are, then let SQLite roll it "
            + "back with: sqlite3 \(path) 'PRAGMA integrity_check'"
    }

    /// Whether SQLite would play back the journal at `journal`: one whose first byte is
    /// not zero (a commit in PERSIST mode zeroes its header; DELETE and TRUNCATE leave
    /// none, or an empty one). SQLite also asks that no connection hold the database's
    /// RESERVED lock: none does, as the daemon and fsck hold the mount lock, and a
    /// program writing the keychain meanwhile is no state to check either.
    static func isHot(_ journal: String) -> Bool {
        let fd = Glibc.open(journal, O_RDONLY | O_CLOEXEC)
        // One that is there but cannot be read is no journal to pass over either.
        guard fd >= 0 else { return errno != ENOENT }
        defer { close(fd) }
        var first: UInt8 = 0
        return read(fd, &first, 1) == 1 && first != 0
    }
}
