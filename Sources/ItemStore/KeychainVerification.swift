// The checks that may refuse a keychain at open, made before the store opens it for
// writing: its schema, and its rows against the device's record (ItemStore+Generation).
// They read through UntouchedReading, so that a refused keychain (an old copy put back,
// a damaged file) is left byte for byte as it was found, with no -wal or -shm beside it.
import DataProtection
import Foundation
import GRDB

/// A keychain the checks accepted, for the open that follows them.
public struct VerifiedKeychain: Sendable {
    let path: String
    /// The rows' digest as the open store sees them, so that the open scans none again.
    let digest: RowSetDigest
}

extension ItemStore {
    /// Checks the keychain at `path` as the store would open it, changing no file:
    /// throws the one-line refusal of an older schema, an old or altered copy, or a
    /// file SQLite finds damaged. The daemon holds the mount lock from here to the
    /// open, so the file the store opens is the one checked.
    public static func verify(path: String, device: LockStateManager) throws -> VerifiedKeychain {
        do {
            return VerifiedKeychain(path: path, digest: try checkedDigest(path, device))
        } catch let error as DatabaseError where KeychainIntegrity.isDamage(error) {
            // The file failed before its integrity check could run (not a database, say).
            throw KeychainIntegrity.damage(at: path) ?? error
        }
    }

    private static func checkedDigest(_ path: String, _ device: LockStateManager) throws -> RowSetDigest {
        let memory = try DatabaseQueue()
        // No file yet: the open makes an empty store, and that is what is checked.
        if FileManager.default.fileExists(atPath: path) {
            let reader = try UntouchedReading.open(path)
            defer { try? reader.close() }
            // First, so that a damaged file is refused as damaged, never as a copy put back.
            if let damage = try reader.read({ try KeychainIntegrity.damage(in: $0, path: path) }) { throw damage }
            let applied = try Schema.appliedMigrations(reader, path: path)
            if Schema.migrator.migrations.allSatisfy(applied.contains) {
                return try reader.read { try check($0, device: device) }
            }
            // The open will migrate it: its rows are checked as they will be then.
            try reader.backup(to: memory)
        }
        try Schema.migrator.migrate(memory)
        return try memory.read { try check($0, device: device) }
    }
}
