// dpfs passcode set|change|remove: only the class-key wrapping changes.
import ArgumentParser
import Glibc
import DPFSProtocol
import DataProtection

struct Passcode: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Set, change or remove the device passcode.",
        subcommands: [SetPasscode.self, ChangePasscode.self, RemovePasscode.self])

    struct SetPasscode: ParsableCommand {
        static let configuration = CommandConfiguration(commandName: "set",
            abstract: "Turn protection on for a device without a passcode.")
        @Argument(help: "The mountpoint.") var mountpoint: String
        @Option(help: "Read the new passcode from this file.") var passcodeFile: String?
        @Option(help: "Read the new passcode from this file.") var newPasscodeFile: String?

        func run() throws {
            let client = try DaemonDeadline.client(for: mountpoint)
            let new = try PasscodeSource.readNew(file: newPasscodeFile ?? passcodeFile)
            _ = try client.send(.passcode(.set), secrets: [new])
        }
    }

    struct ChangePasscode: ParsableCommand {
        static let configuration = CommandConfiguration(commandName: "change",
            abstract: "Change the passcode; files and items stay as they are.")
        @Argument(help: "The mountpoint.") var mountpoint: String
        @Option(help: "Read the current passcode from this file (else stdin).") var passcodeFile: String?
        @Option(help: "Read the new passcode from this file.") var newPasscodeFile: String?

        func validate() throws {
            // Both from one stdin cannot be told apart; a terminal prompts for each.
            if passcodeFile == nil && newPasscodeFile == nil && isatty(STDIN_FILENO) == 0 {
                throw ValidationError("the current and the new passcode cannot both come from stdin: "
                                      + "give --passcode-file or --new-passcode-file, and the other on stdin")
            }
        }

        func run() throws {
            let client = try DaemonDeadline.client(for: mountpoint)
            let current = try PasscodeSource.read(file: passcodeFile, prompt: "Current passcode: ")
            let new = try PasscodeSource.readNew(file: newPasscodeFile)
            _ = try client.send(.passcode(.change), secrets: [current, new])
        }
    }

    struct RemovePasscode: ParsableCommand {
        static let configuration = CommandConfiguration(commandName: "remove",
            abstract: "Remove the passcode: every class becomes always available.")
        @Argument(help: "The mountpoint.") var mountpoint: String
        @Option(help: "Read the current passcode from this file (else stdin).") var passcodeFile: String?

        func run() throws {
            let client = try DaemonDeadline.client(for: mountpoint)
            let current = try PasscodeSource.read(file: passcodeFile, prompt: "Current passcode: ")
            _ = try client.send(.passcode(.remove), secrets: [current])
        }
    }
}
