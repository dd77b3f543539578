// The database file and its tables (documented in dpfs(5)). Opened in WAL mode with
// full sync: every call is one transaction, so a kill -9 or power cut leaves each
// call wholly done or not done, and a reported success is on disk.
import Foundation
import Glibc
import GRDB

enum Schema {
    static func open(_ path: String) throws -> DatabasePool {
        // Create the file 0600 before SQLite does: its -wal and -shm take the same mode,
        // and even hashed attributes and sealed secrets are nobody else's business.
        let fd = Glibc.open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw ItemStoreError("cannot open the item store \(path): \(String(cString: strerror(errno)))") }
        close(fd)
        var configuration = Configuration()
        configuration.busyMode = .timeout(10)
        configuration.prepareDatabase { db in
            // Freed pages are zeroed, so a deleted item's sealed secret leaves no trace.
            try db.execute(sql: "PRAGMA secure_delete = ON")
        }
        let pool = try DatabasePool(path: path, configuration: configuration)
        // Each commit syncs the -wal before the call reports success. GRDB sets its
        // writer to NORMAL when it turns WAL on, after prepareDatabase: that syncs only
        // at checkpoints, and a power cut could take back a commit the secret store's
        // record already vouches for alone, which would then refuse the database.
        try pool.writeWithoutTransaction { db in try db.execute(sql: "PRAGMA synchronous = FULL") }
        // A mount refused an older schema before (KeychainVerification); an init has not.
        _ = try appliedMigrations(pool, path: path)
        try migrator.migrate(pool)
        return pool
    }

    /// The migrations applied to the database `reader` reads. A v1 store kept item
    /// attributes in clear, a v2 store had no key items; both are refused, never read
    /// or migrated (dpfs has no deployed keychains to carry over). Checked before the
    /// store opens for writing (KeychainVerification), which would change the file.
    static func appliedMigrations(_ reader: some DatabaseReader, path: String) throws -> Set<String> {
        let applied = try reader.read { db -> [String] in
            guard try db.tableExists("grdb_migrations") else { return [] }
            return try String.fetchAll(db, sql: "SELECT identifier FROM grdb_migrations")
        }
        if let older = applied.first(where: { !migrator.migrations.contains($0) }) {
            throw ItemStoreError("the item store \(path) has schema \(older); this dpfs reads schema "
                                 + "\(currentVersion) only (there is no migration: make a new device with dpfs init)")
        }
        return Set(applied)
    }

    static let currentVersion = "v3"

    static var migrator: DatabaseMigrator {
        var migrator = DatabaseMigrator()
        migrator.registerMigration(currentVersion) { db in
            try db.execute(sql: """
                CREATE TABLE apps (
                    bundleID TEXT PRIMARY KEY NOT NULL,
                    teamID TEXT NOT NULL,
                    accessGroups TEXT NOT NULL,
                    defaultDataProtection TEXT,
                    isSandboxApp INTEGER NOT NULL DEFAULT 0,
                    entitlements BLOB
                );
                -- Attribute columns hold keyed hashes (ItemKeys), never the attribute;
                -- the attributes themselves are sealed in `attributes` (ItemRecord).
                CREATE TABLE items (
                    id INTEGER PRIMARY KEY AUTOINCREMENT,
                    class TEXT NOT NULL,
                    service BLOB NOT NULL,
                    server BLOB NOT NULL,
                    account BLOB NOT NULL,
                    protocol BLOB NOT NULL,
                    port BLOB NOT NULL,
                    path BLOB NOT NULL,
                    securityDomain BLOB NOT NULL,
                    authenticationType BLOB NOT NULL,
                    keyClass BLOB NOT NULL,
                    applicationLabel BLOB NOT NULL,
                    applicationTag BLOB NOT NULL,
                    keyType BLOB NOT NULL,
                    keySizeInBits BLOB NOT NULL,
                    tokenID BLOB NOT NULL,
                    accessGroup BLOB NOT NULL,
                    synchronizable INTEGER NOT NULL,
                    label BLOB,
                    accessible TEXT NOT NULL,
                    attributes BLOB NOT NULL,
                    secret BLOB NOT NULL
                );
                -- Apple's uniqueness key. service then server first: a genp query names
                -- service (server is always absent), an inet query server (service is
                -- absent), so both find their rows through a prefix of this one index.
                -- A key's identity (class keys) is its key class, application label
                -- (the public key's SHA-1), tag, type, size and token.
                CREATE UNIQUE INDEX items_identity ON items(
                    class, service, server, account, protocol, port, path,
                    securityDomain, authenticationType, keyClass, applicationLabel,
                    applicationTag, keyType, keySizeInBits, tokenID, accessGroup, synchronizable);
                """)
        }
        // The generation every write bumps (ItemStore+Generation).
        migrator.registerMigration("v2-generation") { db in
            try db.execute(sql: """
                CREATE TABLE meta (key TEXT PRIMARY KEY NOT NULL, value INTEGER NOT NULL);
                INSERT INTO meta (key, value) VALUES ('generation', 0);
                """)
        }
        // The versions keychain sync wrote that its state file may not record yet
        // (ItemStore+ReceivedVersions). Empty in a store made before it, so adding it
        // changes no recorded digest.
        migrator.registerMigration("v3-sync-received") { db in
            try db.execute(sql: """
                CREATE TABLE sync_received (
                    recordID TEXT PRIMARY KEY NOT NULL,
                    modified REAL NOT NULL,
                    deleted INTEGER NOT NULL,
                    writer TEXT NOT NULL
                );
                """)
        }
        return migrator
    }
}

public struct ItemStoreError: Error, CustomStringConvertible {
    public let description: String
    init(_ description: String) { self.description = description }
}
