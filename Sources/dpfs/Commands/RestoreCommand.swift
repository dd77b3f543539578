// dpfs restore: a new device (new secret, new keys, the init options) made from a
// backup, as an iPhone restored from an encrypted backup: its files with their
// classes, modes and times, its apps and its migratable keychain items; no
// ThisDeviceOnly item, for none was ever in the backup.
//
// Nothing is made until the whole backup has been read and checked to its FINAL chunk
// (BackupCheck): a wrong password, a damaged or truncated file is one line and no
// DEVICE_DIR. The device is then made in a hidden directory beside DEVICE_DIR, mounted
// on a private mount point, filled through the mount and the daemon (so the filesystem
// and item store do their own sealing), unmounted, synced, and only then renamed to
// DEVICE_DIR (or, DEVICE_DIR being a mount point, made in it and moved up: see
// BuildDirectory); a failure on the way removes it and its secret-store entries.
import ArgumentParser
import Backup
import CLinux
import DataProtection
import DPFSProtocol
import Foundation
import Glibc
import SystemCalls

struct RestoreCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "restore",
        abstract: "Make a new device from a backup: its files, classes and migratable keychain items.")

    @Argument(help: "A new or empty directory for the new device.") var deviceDirectory: String
    @Option(help: ArgumentHelp("The backup file (written by dpfs backup).", valueName: "file")) var from: String
    @Option(help: "Read the backup password from the first line of this file (mode 0600).") var passwordFile: String?
    @OptionGroup var options: NewDeviceOptions

    func run() throws {
        let directory = DeviceDirectory(deviceDirectory)
        try options.checkClassName()
        BuildDirectory.removeAbandoned(for: directory, purpose: "restore")
        try Self.checkTarget(directory.root)
        let fd = open(AbsolutePath.of(from), O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw CLIError("cannot open the backup \(from): \(String(cString: strerror(errno)))") }
        defer { close(fd) }
        // The backup is read twice (checked whole before anything is made), so a pipe
        // would be found out only after the password and the first pass.
        guard lseek(fd, 0, SEEK_CUR) >= 0 else {
            throw CLIError("cannot restore from \(from): dpfs restore reads the backup twice and this cannot be read again "
                           + "(a pipe?); save it to a file first")
        }
        let progress = ProgressLine()
        let stream: OpeningStream
        let contents: BackupContents
        do {
            let password = try BackupPassword.read(file: passwordFile, confirm: false)
            defer { password.wipe() }
            Interruption.catchSignals()
            stream = try OpeningStream(fd: fd, password: password)
            contents = try BackupCheck.run(stream) {
                try Interruption.check()
                progress.update("checking the backup: \(ProgressLine.size(stream.fileBytes))")
            }
            progress.end()
        } catch {
            progress.end()
            throw Self.explain(error, device: directory.root)
        }
        let plan = try options.plan(for: directory.root, defaults: Self.defaults(contents))
        let passcode = try options.readPasscode()
        defer { passcode?.wipe() }
        let building = try BuildDirectory(for: directory, purpose: "restore")
        var deviceUUID: String?
        do {
            deviceUUID = try options.make(in: building.directory, plan: plan, passcode: passcode)
            let mount = try TemporaryMount(building.directory)
            do {
                try fill(mount.mountpoint, from: stream, contents: contents, passcode: passcode, progress: progress)
                progress.end()
            } catch {
                progress.end()
                mount.takeDown()
                throw error
            }
            guard mount.takeDown() else { throw CLIError("the new device's daemon did not end after its unmount") }
            try building.commit(as: directory)
        } catch {
            if let deviceUUID { DeviceProvisioning.discard(deviceUUID, in: plan.store) }
            building.discard()
            throw Self.explain(error, device: directory.root)
        }
        if contents.damagedFiles > 0 {
            let note = "note: the backup left out \(counted(contents.damagedFiles, "damaged file")) (dpfs backup --skip-damaged)\n"
            FileHandle.standardError.write(Data(note.utf8))
        }
        print("secret store: \(plan.store) (\(plan.storeNote))")
        print("restored \(counted(contents.files, "file")) and \(counted(contents.items, "keychain item")) into \(directory.root) "
              + "(a new device: default class \(plan.defaultClass.name), passcode \(passcode == nil ? "none" : "set"))")
    }

    /// DEVICE_DIR must not exist, or be an empty directory.
    static func checkTarget(_ root: String) throws {
        var info = stat()
        guard lstat(root, &info) == 0 else { return }
        guard info.st_mode & S_IFMT == S_IFDIR else { throw CLIError("\(root) exists and is not a directory") }
        guard (try? FileManager.default.contentsOfDirectory(atPath: root))?.isEmpty == true else {
            throw CLIError("\(root) is not empty; dpfs restore needs a new or empty directory")
        }
    }

    /// The new device's defaults where no option says otherwise: the backup's.
    static func defaults(_ contents: BackupContents) -> NewDeviceOptions.Defaults {
        var defaults = NewDeviceOptions.Defaults()
        if let name = contents.device.text("defaultProtection"), let protection = ProtectionClass(name: name) {
            defaults.protection = protection
        }
        if let app = contents.apps.first(where: { $0.fields["sandboxApp"] == [1] }) {
            defaults.appBundleID = app.text("bundleID")
            defaults.entitlements = app.fields["entitlements"].map { Data($0) }
        }
        return defaults
    }

    /// The second pass: apps, items and the tree into the mounted new device.
    private func fill(_ root: String, from stream: OpeningStream, contents: BackupContents, passcode: SecureBuffer?,
                      progress: ProgressLine) throws {
        let client = try DaemonDeadline.client(for: root)
        if let passcode { _ = try client.send(.unlock, secrets: [passcode]) }
        let sandboxApp = try client.send(.appIdentity(bundleID: nil)).app
        try stream.rewind()
        let extractor = SandboxExtractor(root: root)
        extractor.progress = {
            try Interruption.check()
            progress.update("restoring: \(ProgressLine.size(stream.fileBytes))")
        }
        while true {
            try Interruption.check()
            let record = try stream.readRecord()
            switch record.kind {
            case .end:
                try extractor.finishDirectories()
                try stream.expectEnd()
                return
            case .device:
                continue
            case .app:
                guard let bundleID = record.text("bundleID"), bundleID != sandboxApp else { continue }
                guard let plist = record.fields["entitlements"] else {
                    FileHandle.standardError.write(Data("note: app \(bundleID) had no entitlements plist and is not registered\n".utf8))
                    continue
                }
                _ = try client.send(.appAdd(entitlements: Data(plist)))
            case .item:
                try importItem(record, from: stream, client: client)
            default:
                try extractor.apply(record, content: stream)
            }
        }
    }

    private func importItem(_ record: BackupRecord, from stream: OpeningStream, client: ControlClient) throws {
        var attributes: [String: String] = [:]
        for (name, value) in record.fields {
            guard let text = String(validating: value, as: UTF8.self) else { throw BackupError.damaged("an item attribute is not text") }
            attributes[name] = text
        }
        let data = LockedSecret(count: ControlProtocol.maxItemDataSize)
        var length = 0
        try stream.readContent { piece in
            guard length + piece.count <= data.count else { throw BackupError.damaged("an item's data is too large") }
            (data.mutableBytes.start + length).update(from: piece.start, count: piece.count)
            length += piece.count
        }
        let secret = LockedSecret.copying(UnsafeRawBufferPointer(rebasing: data.bytes[0..<length]))
        let reply = try client.send(.keychainImport(attributes: attributes), secrets: [secret])
        if let response = reply.keychain, response.status != 0 {
            throw CLIError("a keychain item could not be restored: \(SecStatus.describe(response.status))"
                           + (response.message.map { ": \($0)" } ?? ""))
        }
    }

    /// One line for a failure; a file of the sandbox by its path there and the device
    /// being restored, not the temporary mount it was written through.
    static func explain(_ error: any Error, device: String) -> any Error {
        switch error {
        case let error as BackupError:
            return CLIError(error.description)
        case let error as SystemError:
            return CLIError("cannot restore into \(device): \(error); nothing was restored")
        default:
            return error
        }
    }
}
