// dpfs fsck: checks an unmounted device with its passcode; --salvage copies out what
// still reads. Exit 0: no damage; 1: damage found (or the check could not run); 17:
// the keychain is whole but not the one the device's record names.
import ArgumentParser
import DataProtection
import Foundation
import Glibc
import BlockStore

struct Fsck: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Check every file of an unmounted device; optionally salvage what still reads.")
    @Argument(help: "The device directory.") var deviceDirectory: String
    @Option(help: "Read the passcode from the first line of this file (else stdin or a prompt).") var passcodeFile: String?
    @Option(help: "Copy every readable file (damaged blocks as zeros) into this new directory.") var salvage: String?

    func run() throws {
        let directory = DeviceDirectory(deviceDirectory)
        guard directory.isInitialised else { throw CLIError(DeviceError.notInitialised(directory.root)) }
        if let salvage {
            try DeviceNesting.refuse("salvage directory", AbsolutePath.of(salvage), of: directory, else: "salvage into a directory elsewhere")
        }
        let lock: Int32
        do { lock = try directory.takeMountLock() } catch { throw CLIError(error, adding: "; unmount it first") }
        defer { close(lock) }
        let useLock: Int32?
        do { useLock = try DeviceUseLock.take(for: directory) } catch let error as DeviceError {
            throw CLIError(error, adding: "; unmount it first")
        }
        defer { if let useLock { close(useLock) } }
        let device: LockStateManager
        do { device = try LockStateManager(directory: directory, gracePeriod: 0) } catch { throw CLIError(error) }
        if let notice = device.bootNotice { FileHandle.standardError.write(Data("dpfs: \(notice)\n".utf8)) }
        for build in LeftoverBuild.remove(from: directory) {
            FileHandle.standardError.write(Data("note: removed \(build), the build directory a killed init or restore left in the finished device\n".utf8))
        }
        // An old copy of the keybag was refused above; the keychain is reported below.
        let keychain = KeychainFinding.of(directory, device: device)
        if device.status().passcodeSet {
            let passcode = try PasscodeSource.read(file: passcodeFile)
            do { try device.unlock(passcode: passcode) } catch { throw CLIError(error) }
        }
        if let salvage {
            let target = AbsolutePath.of(salvage)
            if let contents = try? FileManager.default.contentsOfDirectory(atPath: target), !contents.isEmpty {
                throw CLIError("salvage directory \(target) is not empty")
            }
            // Checked before the device is read: a salvage that cannot be written would
            // otherwise report the damage and recover nothing.
            // Its own directory readable by the owner only: what it receives is plaintext.
            let parent = (target as NSString).deletingLastPathComponent
            try? FileManager.default.createDirectory(atPath: parent, withIntermediateDirectories: true)
            if mkdir(target, 0o700) != 0 && errno != EEXIST {
                throw CLIError("cannot make the salvage directory \(target): \(String(cString: strerror(errno)))")
            }
            var st = stat()
            guard stat(target, &st) == 0, st.st_mode & S_IFMT == S_IFDIR else {
                throw CLIError("the salvage target \(target) is not a directory")
            }
            guard access(target, W_OK | X_OK) == 0 else {
                throw CLIError("cannot write into the salvage directory \(target): \(String(cString: strerror(errno)))")
            }
        }
        print("secret store: \(device.secretStore)")
        if let keychain { print(keychain) }
        let report = DeviceCheck(device: device).run(salvageInto: salvage.map(AbsolutePath.of))
        for damage in report.damage { print(damage) }
        let problems = report.damage.count + (keychain == nil ? 0 : 1)
        let verdict = problems == 0 ? "clean" : counted(problems, "problem")
        print("checked \(counted(report.files, "file")), \(counted(report.blocks, "block")): \(verdict)"
              + (salvage != nil ? "; salvaged \(counted(report.salvaged, "file")) into \(AbsolutePath.of(salvage ?? ""))" : ""))
        // Copies missing for want of space are a failure, whatever the check found.
        if let failure = report.salvageFailure {
            throw CLIError(failure + "; \(counted(report.salvaged, "file")) salvaged whole before it")
        }
        // A keychain that is whole but not the one the record names keeps its own status.
        if let keychain, keychain.status != .failure { throw ExitCode(keychain.status.rawValue) }
        if problems > 0 { throw ExitCode.failure }
    }

    private func counted(_ number: Int, _ noun: String) -> String { "\(number) \(noun)\(number == 1 ? "" : "s")" }
}
