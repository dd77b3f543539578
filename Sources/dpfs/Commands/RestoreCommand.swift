// dpfs restore: a new device (new secret, new keys, the init options) made from a
// backup, as an iPhone restored from an encrypted backup: its files with their
// classes, modes and times, its apps and its migratable keychain items; no
// ThisDeviceOnly item, for none was ever in the backup.
//
// Nothing is made until the whole backup has been read and checked to its FINAL chunk
// (BackupCheck): a wrong password, a damaged or truncated file is one line and no
// DEVICE_DIR. The device is then made in a hidden directory beside DEVICE_DIR, mounted
// on a private mount point, filled through the mount and the daemon (so the filesystem
// and item store do their own sealing), unmounted, and only then renamed to
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
        try Self.checkTarget(directory.root)
        let fd = open(AbsolutePath.of(from), O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw CLIError("cannot open the backup \(from): \(String(cString: strerror(errno)))") }
        defer { close(fd) }
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
            throw Self.explain(error)
        }
        let plan = try options.plan(for: directory.root, defaults: Self.defaults(contents))
        let passcode = try options.readPasscode()
        defer { passcode?.wipe() }
        let building = try BuildDirectory(for: directory)
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
            throw Self.explain(error)
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

    static func explain(_ error: any Error) -> any Error {
        switch error {
        case let error as BackupError:
            return CLIError(error.description)
        case let error as SandboxArchiver.Failure:
            return CLIError("cannot restore the sandbox: \(error); nothing was restored")
        default:
            return error
        }
    }
}

/// The hidden directory where the new device is made, then made DEVICE_DIR: beside it,
/// renamed over it once complete. A mount point (an empty filesystem mounted for the
/// device, as `init` takes one) cannot be renamed over: the device is then made inside
/// it and its entries moved up one by one, the keybag last, for the keybag is what
/// makes a directory a device.
struct BuildDirectory {
    let directory: DeviceDirectory
    /// Whether it lies inside DEVICE_DIR, a mount point, rather than beside it.
    let inside: Bool

    init(for target: DeviceDirectory) throws {
        inside = Self.isMountPoint(target.root)
        let parent = (target.root as NSString).deletingLastPathComponent
        let name = (target.root as NSString).lastPathComponent
        var isDirectory: ObjCBool = false
        if !inside {
            guard FileManager.default.fileExists(atPath: parent, isDirectory: &isDirectory), isDirectory.boolValue else {
                throw CLIError("\(parent) does not exist; make it first")
            }
        }
        var template = Array((inside ? "\(target.root)/.restore-XXXXXX" : "\(parent)/.\(name).restore-XXXXXX").utf8CString)
        guard mkdtemp(&template) != nil else {
            throw CLIError("cannot make a directory \(inside ? "in" : "beside") \(target.root): \(String(cString: strerror(errno)))")
        }
        directory = DeviceDirectory(String(decoding: template.dropLast().map { UInt8(bitPattern: $0) }, as: UTF8.self))
    }

    /// Whether `path` is the root of a mount (its mount is not its parent's): a bind
    /// mount of a directory of the same filesystem is one too.
    static func isMountPoint(_ path: String) -> Bool {
        var own: UInt64 = 0
        var parents: UInt64 = 0
        guard dpfs_mount_id(path, &own) >= 0, dpfs_mount_id(path + "/..", &parents) >= 0 else { return false }
        return own != parents
    }

    /// Makes the finished device DEVICE_DIR (which is absent or empty).
    func commit(as target: DeviceDirectory) throws {
        if inside { return try moveUp(into: target) }
        guard rename(directory.root, target.root) == 0 else {
            throw CLIError("cannot move the new device to \(target.root): \(String(cString: strerror(errno)))")
        }
        try? AtomicFile.syncDirectory(of: target.root)
    }

    /// Moves each entry up into `target`, the keybag last and after a sync, so that a
    /// crash on the way leaves no directory that looks like a device. A failure moves
    /// back what was moved, for `discard` to remove with the rest.
    private func moveUp(into target: DeviceDirectory) throws {
        let keybag = (target.keybagPath as NSString).lastPathComponent
        let names: [String]
        do {
            names = try FileManager.default.contentsOfDirectory(atPath: directory.root).filter { $0 != keybag }
        } catch {
            throw CLIError("cannot list the new device in \(directory.root): \(error)")
        }
        // The mode a device directory made by rename has (mkdtemp's 0700), not the
        // mount's (a tmpfs is 1777): where it is made does not change what it is.
        var own = stat()
        if stat(directory.root, &own) == 0 { chmod(target.root, own.st_mode & 0o7777) }
        var moved: [String] = []
        for name in names + [keybag] {
            // syncDirectory(of: a path) syncs the directory holding it: the target.
            if name == keybag { try? AtomicFile.syncDirectory(of: target.keybagPath) }
            guard Self.moveWithoutReplacing(directory.root + "/" + name, to: target.root + "/" + name) else {
                let reason = String(cString: strerror(errno))
                for name in moved { _ = rename(target.root + "/" + name, directory.root + "/" + name) }
                throw CLIError("cannot move the new device's \(name) into \(target.root): \(reason)")
            }
            moved.append(name)
        }
        rmdir(directory.root)
        try? AtomicFile.syncDirectory(of: target.keybagPath)
    }

    /// rename(2) that fails (EEXIST) rather than replace what someone put in the target
    /// meanwhile; a plain rename where the filesystem has no RENAME_NOREPLACE.
    private static func moveWithoutReplacing(_ source: String, to destination: String) -> Bool {
        if renameat2(AT_FDCWD, source, AT_FDCWD, destination, RenameFlag.noReplace) == 0 { return true }
        return errno == EINVAL && rename(source, destination) == 0
    }

    func discard() {
        try? FileManager.default.removeItem(atPath: directory.root)
    }
}
