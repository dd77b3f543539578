// The backup password: from --password-file (the first line of a file only its owner
// may access, as a passcode file), else stdin when it is not a terminal, else a
// prompt; straight into locked memory, never through argv.
import DataProtection
import DPFSProtocol
import Foundation
import Glibc

enum BackupPassword {
    /// `confirm`: a prompt asks twice (a new backup's password), so a typo made with
    /// echo off does not lock the backup away.
    static func read(file: String?, confirm: Bool) throws -> SecureBuffer {
        if let file {
            do { return try PasscodeInput.read(file: file, what: "password file") } catch { throw CLIError(error) }
        }
        let first = try PasscodeSource.read(file: nil, prompt: "Backup password: ")
        guard confirm, isatty(STDIN_FILENO) != 0 else { return first }
        let again = try PasscodeSource.read(file: nil, prompt: "Again: ")
        defer { again.wipe() }
        guard Sodium.equal(first.bytes, again.bytes) else {
            first.wipe()
            throw CLIError("the two passwords differ; no backup was written")
        }
        return first
    }
}
