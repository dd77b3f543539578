// The sync engine's failures, each one line for `dpfs sync` and the daemon's log.
public struct SyncError: Error, CustomStringConvertible, Sendable {
    public let description: String
    /// The server could not be reached or the connection broke: retried with backoff.
    public let isUnreachable: Bool
    /// PostgreSQL's SQLSTATE, when the server refused a statement.
    let state: String?

    init(_ description: String, isUnreachable: Bool = false, state: String? = nil) {
        self.description = description; self.isUnreachable = isUnreachable; self.state = state
    }

    static func unreachable(_ reason: String) -> SyncError {
        SyncError("the sync server is unreachable: \(reason)", isUnreachable: true)
    }

    static func server(_ reason: String, state: String?) -> SyncError {
        SyncError("the sync server refused a statement: \(reason)", state: state)
    }
}
