// dpfs run: runs a program as the app inside the sandbox (SPEC §10), with the
// environment that makes Foundation's directories land in the iOS layout of the mount.
import ArgumentParser
import Control
import Foundation
import Glibc

struct Run: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Run a program as the app inside the sandbox (HOME, TMPDIR, XDG_* and DPFS_* set).",
        discussion: """
            The program's Documents, Library/Caches, Library/Application Support and tmp \
            directories (as Foundation finds them) are the mount's. dpfs run exits with the \
            program's status, or 128+N when a signal N ended it, and passes SIGINT, SIGTERM, \
            SIGHUP and SIGQUIT on to it.
            """)

    @Argument(help: "The mountpoint of a mounted dpfs sandbox.") var mountpoint: String
    @Option(help: "Run as this registered app (default: the sandbox's own app).") var app: String?
    @Argument(parsing: .postTerminator, help: "The program and its arguments, after --.") var command: [String] = []

    func validate() throws {
        guard !command.isEmpty else { throw ValidationError("give the program to run after --, e.g. dpfs run MNT -- ./MyAppTests") }
    }

    func run() throws {
        // Blocked before anything else so a signal that arrives early is forwarded, not fatal.
        let forwarded = ChildSignals.blockForwardedSignals()
        let mount = absolutePath(mountpoint)
        let bundleID = try Self.appIdentity(mount: mount, requested: app)
        let environment = SandboxEnvironment.make(mount: mount, app: bundleID, inherited: ProcessInfo.processInfo.environment)
        let child: pid_t
        do {
            child = try ChildProcess.spawn(command, environment: environment, signalMask: forwarded.previous)
        } catch let error as ChildProcess.SpawnError {
            FileHandle.standardError.write(Data("Error: \(error.description)\n".utf8))
            throw ExitCode(error.code == ENOENT ? 127 : 126)
        }
        let status = ChildSignals.forwardUntilExit(of: child, signals: forwarded.set)
        throw ExitCode(status)
    }

    /// Checks that the mountpoint is a mounted dpfs sandbox and resolves the app.
    static func appIdentity(mount: String, requested: String?) throws -> String {
        let reply: ControlReply
        do {
            reply = try ControlClient(mountpoint: mount).send(.appIdentity(bundleID: requested))
        } catch let error as ControlClientError {
            throw CLIError("\(error)")
        }
        guard let bundleID = reply.app else { throw CLIError("the daemon of \(mount) did not name its app") }
        return bundleID
    }
}
