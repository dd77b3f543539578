// The sync engine's failures, each one line for `dpfs sync` and the daemon's log.
public struct SyncError: Error, CustomStringConvertible, Sendable {
    public let description: String
    /// The server could not be reached or the connection broke: retried with backoff.
    public let isUnreachable: Bool
    /// The device's own sync state no longer opens (an erase replaced the key it is
    /// sealed under): no retry can help, only `dpfs sync leave`.
    public let stopsSync: Bool
    /// The server answered and refused the connection, or its address is malformed:
    /// retried like an unreachable server, but `status` does not call it unreachable.
    public let isRefusal: Bool
    /// PostgreSQL's SQLSTATE, when the server refused a statement.
    let state: String?

    init(_ description: String, isUnreachable: Bool = false, isRefusal: Bool = false, stopsSync: Bool = false,
         state: String? = nil) {
        self.description = description; self.isUnreachable = isUnreachable; self.isRefusal = isRefusal
        self.stopsSync = stopsSync; self.state = state
    }

    static func stateDoesNotOpen(_ purpose: String) -> SyncError {
        SyncError("the sync state's \(purpose) no longer opens (the device was erased, or sync.json was altered): "
                  + "`dpfs sync leave` ends this device's membership", stopsSync: true)
    }

    static func serverBeforeRotation(server: Int, device: Int) -> SyncError {
        SyncError("the sync server's account is at key epoch \(server), before this device's \(device): the server was put back "
                  + "from a backup taken before a member left; every member must `dpfs sync leave` and the account be made anew",
                  stopsSync: true)
    }

    /// Records this device pulled and cannot read: sealed under other keys, or altered.
    static func recordsDoNotOpen(_ count: Int) -> SyncError {
        SyncError("\(count) records on the sync server do not open with this device's account keys: they were altered on the "
                  + "server, or sealed by a device that holds other keys; the device whose keys differ must `dpfs sync leave` "
                  + "and join again with a new invitation")
    }

    /// Records this device did not fetch, being larger than any item's record, named
    /// by id, size and sequence (the first few): the writer is sealed inside each.
    static func recordsRefused(_ refused: [String: RefusedRecord]) -> SyncError {
        let named = refused.sorted { $0.value.sequence < $1.value.sequence }.prefix(5)
            .map { "\($0.key) (\($0.value.size) bytes, sequence \($0.value.sequence))" }
        let more = refused.count > named.count ? " and \(refused.count - named.count) more" : ""
        return SyncError("\(refused.count) records on the sync server are larger than any item's record "
                         + "(\(RecordPlaintext.maxSealedSize) bytes) and were refused unread: \(named.joined(separator: ", "))\(more); "
                         + "the server, or a member writing its tables, made them; a later version of each replaces it")
    }

    static func unreachable(_ reason: String) -> SyncError {
        SyncError("the sync server is unreachable: \(reason)", isUnreachable: true)
    }

    static func server(_ reason: String, state: String?) -> SyncError {
        SyncError("the sync server refused a statement: \(reason)", state: state)
    }
}
