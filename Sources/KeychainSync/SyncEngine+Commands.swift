// dpfs sync create | invite | join | leave | status, run by the daemon: each opens a
// connection of its own, holds the engine's round lock so that no push races it, and
// wakes the engine when done. A command whose requester has gone (interrupted while
// the command waited for the lock or the server) is dropped rather than committed:
// nobody would learn its outcome, and an invitation nobody asked for any more is a
// secret left lying about.
import DPFSProtocol
import DataProtection
import Foundation
import Glibc

extension SyncEngine {
    /// Runs `command`; `requesterGone` says whether the one who asked has hung up.
    public func perform(_ command: SyncCommand, requesterGone: () -> Bool = { false }) throws
        -> (message: String?, report: SyncReport) {
        // An engine whose thread could not start tries again: a command wants it.
        try? startRunning()
        // Status reads the state file and the engine's last word: it never waits for a
        // round, which may be waiting for an unreachable server.
        if case .status = command { return (nil, try report()) }
        func stillWanted() throws {
            guard requesterGone() else { return }
            logger.notice("keychain sync: dropped a sync \(Self.name(of: command)): its requester hung up")
            throw Self.withdrawn
        }
        let message: String? = try work.withLock { _ in
            try stillWanted()
            switch command {
            case .create(let server): return try create(server: server, stillWanted)
            case .invite(let file): return try invite(to: file, stillWanted)
            case .join(let server, let file): return try join(server: server, invitationFile: file, stillWanted)
            case .leave: return try leave(stillWanted)
            case .status: return nil
            }
        }
        wake()
        return (message, try report())
    }

    public func report() throws -> SyncReport {
        guard let state = try stateFile.current() else { return SyncReport(member: false) }
        var report = SyncReport(member: true)
        report.account = state.accountID
        report.device = state.deviceID
        report.server = Self.displayed(state.server)
        report.epoch = state.epoch
        report.pending = state.entries.values.filter(\.pending).count
        report.lastSequence = state.lastSequence
        let shared = shared.withLock { $0 }
        report.connection = shared.connection ?? "connecting"
        report.lastError = shared.lastError
        report.members = shared.members
        return report
    }

    private func create(server: String, _ stillWanted: () throws -> Void) throws -> String {
        try refuseMember()
        let parsed = try ConnectionString(server)
        let (publicKey, privateKey) = SealedBox.makeKeyPair()
        let crypto = AccountCrypto(accountID: Hex.encode(Sodium.randomBytes(16)), epoch: 1,
                                   key: SecureBuffer.random(count: AEAD.keySize), idKey: SecureBuffer.random(count: AEAD.keySize))
        let deviceID = Hex.encode(Sodium.randomBytes(16))
        let state = try newState(server: server, crypto: crypto, deviceID: deviceID, publicKey: publicKey, privateKey: privateKey)
        let connection = try PostgresConnection(server: parsed)
        try ServerSchema.ensure(connection)
        try connection.transaction {
            try connection.execute("INSERT INTO dpfs_sync_accounts (account_id, epoch) VALUES ($1, 1)", [.text(crypto.accountID)])
            try addMember(connection, crypto: crypto, deviceID: deviceID, publicKey: publicKey)
            try stillWanted()
        }
        try stateFile.save(state)
        return "created sync account \(crypto.accountID); this device is its first member"
    }

    private func invite(to file: String, _ stillWanted: () throws -> Void) throws -> String {
        guard let state = try stateFile.current() else { throw Self.notMember }
        guard let keys = try SyncState.open(state.sealedKeys, purpose: "account-keys", accountID: state.accountID, device: device) else {
            throw Self.beforeFirstUnlock
        }
        // The server for the reader's reference only (join takes its own --server): the
        // invitation is the account's secret, not the server's, so its password stays out.
        let invitation = Invitation(accountID: state.accountID, server: Self.displayed(state.server), epoch: state.epoch,
                                    token: SecureBuffer.random(count: 32), keyPair: keys)
        let connection = try PostgresConnection(server: try connectionString(of: state))
        let epoch = try connection.execute("SELECT epoch FROM dpfs_sync_accounts WHERE account_id = $1", [.text(state.accountID)])
        guard epoch.int(0, 0) == state.epoch else {
            throw SyncError("this device has not yet caught up with the account's keys; try again in a moment")
        }
        try stillWanted()
        try connection.execute("INSERT INTO dpfs_sync_invitations (account_id, token_hash) VALUES ($1, $2)",
                               [.text(state.accountID), .bytes(invitation.tokenHash)])
        try invitation.write(to: file)
        return "wrote an invitation for one device to \(file); it joins with dpfs sync join"
    }

    /// PostgreSQL's SQLSTATE for a table that is not there.
    static let undefinedTable = "42P01"

    private func join(server: String, invitationFile: String, _ stillWanted: () throws -> Void) throws -> String {
        try refuseMember()
        let parsed = try ConnectionString(server)
        let invitation = try Invitation.read(from: invitationFile)
        guard let crypto = AccountCrypto(accountID: invitation.accountID, epoch: invitation.epoch, keyPair: invitation.keyPair) else {
            throw SyncError("\(invitationFile) is not a dpfs sync invitation")
        }
        let (publicKey, privateKey) = SealedBox.makeKeyPair()
        let deviceID = Hex.encode(Sodium.randomBytes(16))
        let state = try newState(server: server, crypto: crypto, deviceID: deviceID, publicKey: publicKey, privateKey: privateKey)
        let connection = try PostgresConnection(server: parsed)
        try connection.transaction {
            let account: PostgresRows
            do {
                account = try connection.execute(
                    "SELECT epoch FROM dpfs_sync_accounts WHERE account_id = $1 FOR UPDATE", [.text(crypto.accountID)])
            } catch let error as SyncError where error.state == Self.undefinedTable {
                throw SyncError("the database at \(parsed.displayed) holds no dpfs sync accounts: "
                                + "give --server the database the account was made in (as its members' sync status shows it)")
            }
            guard account.count == 1 else { throw SyncError("the server at \(parsed.displayed) has no such account") }
            guard account.int(0, 0) == crypto.epoch else {
                throw SyncError("the invitation is out of date (the account's keys changed since); ask a member for a new one")
            }
            try proveKeys(crypto, connection, server: parsed.displayed)
            let used = try connection.execute("DELETE FROM dpfs_sync_invitations WHERE account_id = $1 AND token_hash = $2",
                                              [.text(crypto.accountID), .bytes(invitation.tokenHash)])
            guard used.changed == 1 else { throw SyncError("the invitation was used already; ask a member for a new one") }
            try addMember(connection, crypto: crypto, deviceID: deviceID, publicKey: publicKey)
            // The members take the new device into their rosters at once.
            try connection.execute("SELECT pg_notify($1, '')", [.text(ServerSchema.channel(crypto.accountID))])
            try stillWanted()
        }
        try stateFile.save(state)
        // Used once: the file would join nobody else, and it holds the account key.
        unlink(invitationFile)
        return "joined sync account \(crypto.accountID)"
    }

    /// Leaves the account: this device's membership goes, a rotation is asked for (the
    /// next member to notice makes it), and the local sync state with its keys is
    /// removed. The items stay on this device, no longer updated.
    private func leave(_ stillWanted: () throws -> Void) throws -> String {
        guard let state = try stateFile.current() else { throw Self.notMember }
        // A leave needs no key: before the first unlock, or after an erase replaced the
        // key the server's password was sealed under, it connects with the server as
        // shown (libpq's password file, PGPASSWORD) rather than not at all.
        let server = (try? state.connectionString(device: device)) ?? nil
        let connection = try PostgresConnection(server: try server ?? ConnectionString(state.server))
        try connection.transaction {
            try connection.execute("DELETE FROM dpfs_sync_members WHERE account_id = $1 AND device_id = $2",
                                   [.text(state.accountID), .text(state.deviceID)])
            try connection.execute("DELETE FROM dpfs_sync_keys WHERE account_id = $1 AND device_id = $2",
                                   [.text(state.accountID), .text(state.deviceID)])
            let left = try connection.execute("SELECT count(*) FROM dpfs_sync_members WHERE account_id = $1", [.text(state.accountID)])
            if left.int(0, 0) == 0 {
                // The last member: the account and every record go.
                try connection.execute("DELETE FROM dpfs_sync_accounts WHERE account_id = $1", [.text(state.accountID)])
            } else {
                try connection.execute("UPDATE dpfs_sync_accounts SET rotate = true WHERE account_id = $1", [.text(state.accountID)])
                try connection.execute("SELECT pg_notify($1, '')", [.text(ServerSchema.channel(state.accountID))])
            }
            try stillWanted()
        }
        try stateFile.remove()
        shared.withLock { $0 = Shared(stopping: $0.stopping) }
        return "left sync account \(state.accountID); this device's items stay here and no longer sync"
    }

    /// Refuses keys that endorse none of the account's members: records sealed under
    /// them would open on no other device, and theirs not here.
    private func proveKeys(_ crypto: AccountCrypto, _ connection: PostgresConnection, server: String) throws {
        let members = try connection.execute(
            "SELECT device_id, public_key, endorsement FROM dpfs_sync_members WHERE account_id = $1", [.text(crypto.accountID)])
        let endorsed = (0..<members.count).contains { row in
            guard let device = members.text(row, 0), let publicKey = members.bytes(row, 1),
                  let endorsement = members.bytes(row, 2) else { return false }
            return crypto.endorses(deviceID: device, publicKey: publicKey, endorsement: endorsement)
        }
        guard endorsed else {
            throw SyncError("the invitation's keys are not those of the account at \(server): the invitation is damaged; "
                            + "ask a member for a new one")
        }
    }

    private func addMember(_ connection: PostgresConnection, crypto: AccountCrypto, deviceID: String, publicKey: [UInt8]) throws {
        try connection.execute(
            "INSERT INTO dpfs_sync_members (account_id, device_id, public_key, endorsement) VALUES ($1, $2, $3, $4)",
            [.text(crypto.accountID), .text(deviceID), .bytes(publicKey),
             .bytes(crypto.endorsement(deviceID: deviceID, publicKey: publicKey))])
    }

    private func newState(server: String, crypto: AccountCrypto, deviceID: String, publicKey: [UInt8],
                          privateKey: SecureBuffer) throws -> SyncState {
        guard let sealedKeys = SyncState.seal(crypto.keyPair(), purpose: "account-keys", accountID: crypto.accountID, device: device),
              let sealedPrivate = SyncState.seal(privateKey, purpose: "device-key", accountID: crypto.accountID, device: device) else {
            throw Self.beforeFirstUnlock
        }
        guard let kept = try SyncState.keeping(server: server, accountID: crypto.accountID, device: device) else {
            throw Self.beforeFirstUnlock
        }
        return SyncState(accountID: crypto.accountID, server: kept.shown, sealedServer: kept.sealed, deviceID: deviceID,
                         epoch: crypto.epoch, sealedKeys: sealedKeys, sealedPrivateKey: sealedPrivate,
                         publicKey: Hex.encode(publicKey), lastSequence: 0, entries: [:], roster: nil)
    }

    /// The state's server to connect to, or the line that says why not yet.
    private func connectionString(of state: SyncState) throws -> ConnectionString {
        guard let server = try state.connectionString(device: device) else { throw Self.beforeFirstUnlock }
        return server
    }

    private func refuseMember() throws {
        if let state = try stateFile.current() {
            throw SyncError("this device is already in sync account \(state.accountID); dpfs sync leave first")
        }
    }

    static let notMember = SyncError("this device is in no sync account (dpfs sync create, or join with an invitation)")
    static let beforeFirstUnlock = SyncError("keychain sync needs the device unlocked once since it started (dpfs unlock)")
    static let withdrawn = SyncError("dropped: the requester hung up before the command was committed")

    private static func name(of command: SyncCommand) -> String {
        switch command {
        case .create: return "create"
        case .invite: return "invite"
        case .join: return "join"
        case .leave: return "leave"
        case .status: return "status"
        }
    }

    /// The server as status shows it: without any password (ConnectionString).
    static func displayed(_ server: String) -> String {
        (try? ConnectionString(server).displayed) ?? "(not shown: libpq cannot read it)"
    }
}
