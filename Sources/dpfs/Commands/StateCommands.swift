// The device-state commands: lock, unlock, restart, status.
import ArgumentParser
import DPFSProtocol
import DataProtection
import Foundation

struct Lock: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Lock the device: complete files and items become unavailable after the grace period.")
    @Argument(help: "The mountpoint.") var mountpoint: String
    @Flag(help: "Skip the grace period: wipe the keys now.") var now = false

    func run() throws {
        let reply = try DaemonDeadline.send(.lock(now: now), to: mountpoint)
        if let message = reply.message { print(message) }
    }
}

struct Unlock: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Unlock the device with its passcode (from a file, stdin or a prompt).")
    @Argument(help: "The mountpoint.") var mountpoint: String
    @Option(help: "Read the passcode from the first line of this file.") var passcodeFile: String?

    func run() throws {
        let client = try DaemonDeadline.client(for: mountpoint)
        let passcode = try PasscodeSource.read(file: passcodeFile)
        _ = try client.send(.unlock, secrets: [passcode])
    }
}

struct Restart: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Simulate a reboot: every class key but none's is wiped; state beforeFirstUnlock.")
    @Argument(help: "The mountpoint.") var mountpoint: String

    func run() throws {
        _ = try DaemonDeadline.send(.restart, to: mountpoint)
    }
}

/// What a command with --json prints on stdout when it fails (the message is on stderr too).
struct Status: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Show the lock state and which classes are available.")
    @Argument(help: "The mountpoint.") var mountpoint: String
    @Flag(help: "Print JSON.") var json = false

    func run() throws {
        let (status, runs) = try JSONFailure.reported(if: json) {
            let reply = try DaemonDeadline.send(.status, to: mountpoint)
            guard let answered = reply.status else { throw CLIError("the daemon sent no status") }
            return (answered, reply.runs ?? [])
        }
        if json { return try printJSON(StatusOutput(status: status, runs: runs)) }
        print("state: \(status.state.rawValue)")
        for protectionClass in ProtectionClass.allCases {
            let available = status.classes[protectionClass.name] == true
            print("  \(protectionClass.name): \(available ? "available" : "unavailable")")
        }
        print("passcode: \(status.passcodeSet ? "set" : "none")")
        print("failed attempts: \(status.failedAttempts)")
        if let wait = status.retryAfter {
            // The TPM's end is the longest it can take; dpfs's own delay is exact.
            let atMost = status.tpmLockout?.retryAfter == wait ? " at most" : ""
            print("next attempt in: \(describeWait(wait))\(atMost)")
        }
        if let tpm = status.tpmLockout { print("TPM lockout: \(Self.describe(tpm))") }
        if status.erased { print("erased: yes (the keys were destroyed after too many failed attempts)") }
        print("default class: \(status.defaultProtection)")
        print("grace period: \(status.gracePeriod) s")
        if let hours = status.userInactivePeriodHours { print("user-inactive period: \(hours) h") }
        if let hours = status.inactivityRebootHours { print("inactivity restart after: \(hours) h locked") }
        if let seconds = status.clockAdvanced { print("clock advanced: \(seconds) s") }
        print("device: \(status.deviceDirectory) (daemon pid \(status.pid))")
        if let app = status.app { print("app: \(app)") }
        if let store = status.secretStore { print("secret store: \(store)") }
        if let transport = status.transport { print("transport: \(transport)") }
        if let inodes = status.inodes { print("inodes held for the kernel: \(inodes)") }
        if let sync = status.sync { print("keychain sync: \(sync)") }
        if let lockOn = status.lockOn { print("lock-on: \(lockOn.line)") }
        // What holds the mount that its holders on the host do not show, and so refuses
        // `dpfs unmount`, as the refusal names it.
        for run in runs { print("app run: \(AppRunHolders.name(run))") }
    }

    /// The TPM's dictionary-attack lockout an unlock met, in the status's words.
    private static func describe(_ tpm: TPMLockoutStatus) -> String {
        let counts = "in force (\(tpm.failures) failed authorization\(tpm.failures == 1 ? "" : "s"), \(tpm.maxTries) allowed)"
        guard let wait = tpm.retryAfter else { return counts + "; it ends only when the TPM's owner resets it" }
        return counts + "; it ends within \(describeWait(wait)) of the TPM running, maybe sooner"
    }
}
