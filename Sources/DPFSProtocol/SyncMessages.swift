// Keychain sync's requests and its report (dpfs sync). Paths are absolute: the daemon
// reads and writes invitation files itself, so the account key never crosses the
// control socket.
public enum SyncCommand: Codable, Sendable {
    case create(server: String)
    case invite(file: String)
    case join(server: String, invitationFile: String)
    case leave
    case status
}

public struct SyncReport: Codable, Sendable {
    /// Whether this device belongs to an account.
    public var member: Bool
    public var account: String?
    public var device: String?
    /// The server as libpq reads it, without any password (ConnectionString).
    public var server: String?
    /// The account key's epoch (it grows at every rotation).
    public var epoch: Int?
    /// "connected", "connected, N records do not open", "server unreachable", "waiting for the first unlock",
    /// "removed from the account".
    public var connection: String?
    /// Local changes not yet on the server.
    public var pending: Int?
    /// The greatest server sequence this device has pulled.
    public var lastSequence: Int?
    /// The last failure, if the last attempt failed.
    public var lastError: String?
    public var members: Int?

    public init(member: Bool) { self.member = member }
}
