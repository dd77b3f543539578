// Why a connection to the sync server failed, from libpq's message (its first line,
// secrets struck out): a server that answered and refused (no such database, a login
// it does not accept) and an address libpq cannot use are said as such, not as a
// server that cannot be reached. Each is still retried with backoff by the engine: a
// database made or a login allowed later takes effect without a command.
extension SyncError {
    static func connectionFailed(_ message: String) -> SyncError {
        let lowered = message.lowercased()
        func has(_ text: String) -> Bool { lowered.contains(text) }
        if has("invalid integer value") || has("invalid port") || has("invalid connection option")
            || has("invalid value for") || has("invalid sslmode") {
            return SyncError("the sync server's address is malformed: \(message)", isUnreachable: true, isRefusal: true)
        }
        if has("database \"") && has("does not exist") {
            return SyncError("the sync server's database does not exist: \(message)", isUnreachable: true, isRefusal: true)
        }
        if has("authentication failed") || has("no pg_hba.conf entry") || has("password") || has("role \"") {
            return SyncError("the sync server refused the login: \(message)", isUnreachable: true, isRefusal: true)
        }
        if has("fatal:") {
            return SyncError("the sync server refused the connection: \(message)", isUnreachable: true, isRefusal: true)
        }
        return unreachable(message)
    }
}
