// A passcode held in locked memory (LockedSecret), for DeviceControl.unlock.
//
// There is deliberately no initializer from a String: a Swift String cannot be wiped and
// may be copied anywhere by the runtime, and the project keeps passcodes out of String,
// Array and Data. Tests write their passcode to a 0600 file (as `dpfs init
// --passcode-file` needs anyway) and read it from there.

import DPFSProtocol
public final class DevicePasscode: Sendable {
    let secret: LockedSecret

    /// The first line of a file (without its newline); a file others may write is refused.
    public init(file path: String) throws {
        do { secret = try PasscodeInput.read(file: path) } catch {
            throw DeviceError.refused(error.description)
        }
    }

    /// The first line of stdin, or a prompt with echo off when stdin is a terminal.
    public init(standardInput prompt: String = "Passcode: ") throws {
        do { secret = try PasscodeInput.readStandardInput(prompt: prompt) } catch {
            throw DeviceError.refused(error.description)
        }
    }

    /// A copy of bytes the caller holds in its own locked memory (the caller wipes its copy).
    public init(copying bytes: UnsafeRawBufferPointer) {
        secret = LockedSecret.copying(bytes)
    }

    /// Zeroes the passcode now rather than when the last reference goes.
    public func wipe() { secret.wipe() }
}
