// What `dpfs status` says of the lock that follows the login session (mount
// --lock-on): the events that lock the device and whether logind's word of them
// reaches the daemon now.

/// The lock that follows the login session, as the daemon has it now.
public struct LockFollowing: Codable, Sendable, Equatable {
    /// The events that lock the device: screen-lock, suspend, logout.
    public var triggers: [String]
    /// Whether the daemon hears logind now; false: a lock-on event would go unseen.
    public var following: Bool
    /// The login session followed; nil when none is (or none is needed: suspend alone).
    public var session: String?
    /// Why the lock does not follow, while it does not.
    public var problem: String?

    public init(triggers: [String], following: Bool, session: String?, problem: String?) {
        self.triggers = triggers; self.following = following; self.session = session; self.problem = problem
    }

    /// "screen-lock,suspend,logout (following session c1)", or why it does not follow.
    public var line: String {
        let events = triggers.joined(separator: ",")
        if following { return "\(events) (following \(session.map { "session \($0)" } ?? "logind"))" }
        return "\(events) (not following: \(problem ?? "logind is not reached"))"
    }
}
