// dpfs sync: keychain sync of synchronizable items between the devices of one account,
// through a PostgreSQL server (dpfs(1) "Keychain sync"). The daemon does the work: it
// holds the keys, reads and writes the invitation files, and runs the engine.
import ArgumentParser
import DataProtection
import DPFSProtocol
import Foundation

struct Sync: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Sync synchronizable keychain items with the other devices of an account (PostgreSQL).",
        subcommands: [Create.self, Invite.self, Join.self, Leave.self, Status.self])

    static func send(_ command: SyncCommand, to mountpoint: String) throws -> ControlReply {
        try DaemonDeadline.client(for: mountpoint).send(.sync(command))
    }
}

extension Sync {
    struct Create: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Create a new account; this device is its first member.")
        @Argument(help: "The mountpoint.") var mountpoint: String
        @Option(help: "The PostgreSQL server: a postgresql:// URL or a libpq connection string.") var server: String

        func run() throws {
            ArgumentHiding.hideValues(of: "server")
            if let message = try Sync.send(.create(server: server), to: mountpoint).message { print(message) }
        }
    }

    struct Invite: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Write an invitation for one more device (mode 0600; it holds the account key).")
        @Argument(help: "The mountpoint.") var mountpoint: String
        @Option(name: .customLong("to-file"), help: "Where to write the invitation.") var file: String

        func run() throws {
            if let message = try Sync.send(.invite(file: AbsolutePath.of(file)), to: mountpoint).message { print(message) }
        }
    }

    struct Join: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Join an account with an invitation from one of its devices.")
        @Argument(help: "The mountpoint.") var mountpoint: String
        @Option(help: "The account's PostgreSQL server.") var server: String
        @Option(name: .customLong("invitation-file"), help: "The invitation (used once, then removed).") var invitationFile: String

        func run() throws {
            ArgumentHiding.hideValues(of: "server")
            // The daemon reads it; a file the caller cannot read is refused here, as the
            // other commands refuse a file they cannot read: exit 1, naming why.
            guard access(invitationFile, R_OK) == 0 else {
                throw CLIError("cannot read invitation file \(invitationFile): \(String(cString: strerror(errno)))")
            }
            let reply = try Sync.send(.join(server: server, invitationFile: AbsolutePath.of(invitationFile)), to: mountpoint)
            if let message = reply.message { print(message) }
        }
    }

    struct Leave: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Leave the account; the others rotate its key, and this device's items stay here, no longer synced.")
        @Argument(help: "The mountpoint.") var mountpoint: String

        func run() throws {
            if let message = try Sync.send(.leave, to: mountpoint).message { print(message) }
        }
    }

    struct Status: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Show the account, the connection and what waits to be sent.")
        @Argument(help: "The mountpoint.") var mountpoint: String
        @Flag(help: "Print JSON.") var json = false

        func run() throws {
            guard let report = try Sync.send(.status, to: mountpoint).sync else { throw CLIError("the daemon sent no sync status") }
            if json { return try printJSON(report) }
            guard report.member else {
                print("keychain sync: off (this device is in no account)")
                return
            }
            print("account: \(report.account ?? "?")")
            print("device: \(report.device ?? "?")")
            print("server: \(report.server ?? "?")")
            print("connection: \(report.connection ?? "?")")
            print("key epoch: \(report.epoch ?? 0)")
            if let members = report.members { print("members: \(members)") }
            print("pending changes: \(report.pending ?? 0)")
            print("last sequence: \(report.lastSequence ?? 0)")
            if let error = report.lastError { print("last error: \(error)") }
        }
    }
}
