// The dpfs command line: one subcommand per file under Commands/.
import ArgumentParser
import DPFSProtocol
import Foundation
import Glibc

@main
struct Dpfs: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "dpfs",
        abstract: "iOS Data Protection for Linux: a sandbox whose files obey a simulated device lock.",
        discussion: "See dpfs(1) for every command and dpfs(5) for the on-disk format.",
        version: DPFSVersion.current,
        subcommands: [
            Init.self, Mount.self, Unmount.self, Unlock.self, Lock.self, Restart.self, Status.self,
            Passcode.self, Protection.self, Events.self, Fsck.self, Keychain.self, App.self, Run.self, Test.self, Clock.self, Biometry.self, TPMLockoutCommand.self, Forget.self, SandboxInit.self,
            BackupCommand.self, RestoreCommand.self, Sync.self,
        ]
    )

    /// `dpfs help NAME…` fails for a name that is no command. ArgumentParser's own
    /// `help` printed the overview and exited 0 for any name, so a script could not
    /// tell a typo from a command.
    static func main() {
        ProcessName.adoptCommandName()
        let arguments = Array(CommandLine.arguments.dropFirst())
        if arguments.first == "help" {
            var command: ParsableCommand.Type = Dpfs.self
            for name in arguments.dropFirst() where !name.hasPrefix("-") && name != "help" {
                guard let next = command.configuration.subcommands.first(where: { $0._commandName == name }) else {
                    exit(withError: ValidationError("'\(name)' is not a command of '\(command._commandName)'"))
                }
                command = next
            }
        }
        do {
            var command = try parseAsRoot(nil)
            refuseMissingSubcommand(type(of: command))
            try command.run()
        } catch {
            // The failures scripts tell apart exit with their own status (ExitStatus);
            // ArgumentParser prints the rest, usage errors with 64.
            let status = ExitStatus.of(error)
            guard status == .failure else {
                FileHandle.standardError.write(Data((fullMessage(for: error) + "\n").utf8))
                Glibc.exit(status.rawValue)
            }
            exit(withError: error)
        }
    }

    /// `dpfs`, `dpfs keychain` and the other groups named without a subcommand print
    /// their help on standard error and exit 64, as any missing argument does
    /// (ArgumentParser printed the help and exited 0, which a script reads as done).
    private static func refuseMissingSubcommand(_ command: ParsableCommand.Type) {
        let configuration = command.configuration
        guard !configuration.subcommands.isEmpty, configuration.defaultSubcommand == nil else { return }
        FileHandle.standardError.write(Data(("Error: missing subcommand\n\n" + helpMessage(for: command)).utf8))
        Glibc.exit(ExitStatus.usage.rawValue)
    }
}
