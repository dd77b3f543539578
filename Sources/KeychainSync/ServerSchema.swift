// The tables on the account's server (dpfs(5) "Keychain sync"). They hold opaque ids,
// counters, public keys and ciphertext only. Created by the first `dpfs sync create`
// against a database, under an advisory lock so that devices creating at once agree.
enum ServerSchema {
    static let statements = [
        """
        CREATE TABLE IF NOT EXISTS dpfs_sync_accounts (
            account_id text PRIMARY KEY,
            seq bigint NOT NULL DEFAULT 0,
            epoch integer NOT NULL,
            rotate boolean NOT NULL DEFAULT false)
        """,
        """
        CREATE TABLE IF NOT EXISTS dpfs_sync_members (
            account_id text NOT NULL REFERENCES dpfs_sync_accounts ON DELETE CASCADE,
            device_id text NOT NULL,
            public_key bytea NOT NULL,
            endorsement bytea NOT NULL,
            PRIMARY KEY (account_id, device_id))
        """,
        """
        CREATE TABLE IF NOT EXISTS dpfs_sync_keys (
            account_id text NOT NULL REFERENCES dpfs_sync_accounts ON DELETE CASCADE,
            epoch integer NOT NULL,
            device_id text NOT NULL,
            wrapped bytea NOT NULL,
            PRIMARY KEY (account_id, epoch, device_id))
        """,
        """
        CREATE TABLE IF NOT EXISTS dpfs_sync_records (
            account_id text NOT NULL REFERENCES dpfs_sync_accounts ON DELETE CASCADE,
            record_id text NOT NULL,
            epoch integer NOT NULL,
            seq bigint NOT NULL,
            payload bytea NOT NULL,
            PRIMARY KEY (account_id, record_id))
        """,
        "CREATE INDEX IF NOT EXISTS dpfs_sync_records_seq ON dpfs_sync_records (account_id, seq)",
        """
        CREATE TABLE IF NOT EXISTS dpfs_sync_invitations (
            account_id text NOT NULL REFERENCES dpfs_sync_accounts ON DELETE CASCADE,
            token_hash bytea NOT NULL,
            PRIMARY KEY (account_id, token_hash))
        """,
    ]

    /// An account's next sequence: the server's clock in microseconds, or one above the
    /// last when the clock has not moved past it. A server put back from a backup thus
    /// numbers what it is sent afterwards above anything it had numbered before, which
    /// members pulled and will not pull again.
    static let nextSequence = "GREATEST(seq + 1, \(clock))"
    /// The server's clock in microseconds since 1970.
    static let clock = "(extract(epoch FROM clock_timestamp()) * 1000000)::bigint"

    /// Creates the tables unless they exist.
    static func ensure(_ connection: PostgresConnection) throws {
        try connection.transaction {
            // "dpfs" in ASCII: one lock id for every dpfs that creates the tables.
            try connection.execute("SELECT pg_advisory_xact_lock(1685087859)")
            for statement in statements { try connection.execute(statement) }
        }
    }

    /// The LISTEN/NOTIFY channel of an account (the account id is 32 hex digits).
    static func channel(_ accountID: String) -> String { "dpfs_sync_" + accountID }
}
