// What the subcommands share: the one-line error type, passcode sources and paths.
import DataProtection
import Foundation

/// A failure reported as one line on stderr with a non-zero exit (ExitStatus).
struct CLIError: Error, CustomStringConvertible {
    let description: String
    let status: ExitStatus

    init(_ description: String, status: ExitStatus = .failure) {
        self.description = description
        self.status = status
    }

    /// `error`'s message, and the status it exits with, with `suffix` added.
    init(_ error: any Error, adding suffix: String = "") {
        self.init("\(error)\(suffix)", status: ExitStatus.of(error))
    }
}

enum PasscodeSource {
    /// From the file if given, else stdin (not a terminal), else a prompt.
    static func read(file: String?, prompt: String = "Passcode: ") throws(CLIError) -> SecureBuffer {
        do {
            if let file { return try PasscodeInput.read(file: file) }
            return try PasscodeInput.readStandardInput(prompt: prompt)
        } catch {
            throw CLIError(error)
        }
    }

    /// A passcode being set: as `read`, but a prompt asks twice, so that a typo made
    /// with echo off does not become a passcode nobody knows.
    static func readNew(file: String?, prompt: String = "New passcode: ") throws(CLIError) -> SecureBuffer {
        let first = try read(file: file, prompt: prompt)
        guard file == nil, isatty(STDIN_FILENO) != 0 else { return first }
        let again = try read(file: nil, prompt: "Again: ")
        defer { again.wipe() }
        guard Sodium.equal(first.bytes, again.bytes) else {
            first.wipe()
            throw CLIError("the two passcodes differ; nothing was changed")
        }
        return first
    }
}



/// Whether `path` is `directory` or inside it, both resolved alike (AbsolutePath).
func isPath(_ path: String, within directory: String) -> Bool {
    path == directory || path.hasPrefix(directory.hasSuffix("/") ? directory : directory + "/")
}

func printJSON<T: Encodable>(_ value: T) throws {
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.sortedKeys]
    print(String(decoding: try encoder.encode(value), as: UTF8.self))
}
