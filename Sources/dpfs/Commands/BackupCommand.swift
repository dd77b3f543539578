// dpfs backup: the sandbox's files (through the mount) and the keychain items that may
// leave the device (from the daemon) into one file sealed under a backup password
// (Backup module; dpfs(5), "Backup file"). The device must be unlocked, as for an iOS
// backup. The file appears whole or not at all: written beside its target, synced,
// then renamed over it (BackupTarget says what the target may be).
import ArgumentParser
import Backup
import CLinux
import DataProtection
import DPFSProtocol
import Foundation
import Glibc
import SystemCalls

struct BackupCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "backup",
        abstract: "Write the sandbox's files and migratable keychain items to one encrypted file.")

    @Argument(help: "The mountpoint of an unlocked device.") var mountpoint: String
    @Option(help: ArgumentHelp("The backup file to write (replaced whole, or left as it was).", valueName: "file")) var to: String
    @Option(help: "Read the backup password from the first line of this file (mode 0600).") var passwordFile: String?
    @Flag(help: ArgumentHelp("Leave out each file that fails to read (damaged), name it, and exit \(ExitStatus.backupIncomplete.rawValue).",
                             discussion: "Without it a damaged file ends the backup and none is written."))
    var skipDamaged = false

    func run() throws {
        let target = try BackupTarget.resolve(to)
        let root = AbsolutePath.of(mountpoint)
        let client = try DaemonDeadline.client(for: root)
        guard let status = try client.send(.status).status else { throw CLIError("the daemon sent no status") }
        guard status.state == .unlocked || !status.passcodeSet else {
            throw CLIError("the device at \(root) is \(status.state.rawValue): unlock it first (a backup reads every class, "
                           + "as an iOS backup needs the device unlocked)", status: .deviceLocked)
        }
        let password = try BackupPassword.read(file: passwordFile, confirm: true)
        Interruption.catchSignals()
        let output = try TemporaryOutput(beside: target)
        do {
            let counts = try write(into: output.fd, replacing: target, password: password, root: root, client: client, status: status)
            password.wipe()
            try output.commit()
            print("backed up \(counted(counts.files, "file")) and \(counted(counts.items, "keychain item")) of \(root) to \(target) "
                  + "(ThisDeviceOnly items stay on the device)")
            guard counts.damaged.isEmpty else { throw Self.incomplete(counts.damaged, device: status.deviceDirectory) }
        } catch let exit as ExitCode {
            throw exit
        } catch {
            password.wipe()
            output.discard()
            throw Self.explain(error, root: root, device: status.deviceDirectory)
        }
    }

    /// The backup is written without the damaged files: each named, and the status that
    /// tells a script so.
    private static func incomplete(_ damaged: [String], device: String) -> ExitCode {
        var text = ""
        for path in damaged { text += "warning: left out \(path): it cannot be read (Input/output error)\n" }
        text += "warning: the backup lacks \(counted(damaged.count, "damaged file")); `dpfs fsck \(device)` names the damage, "
            + "and its --salvage recovers what is readable\n"
        FileHandle.standardError.write(Data(text.utf8))
        return ExitCode(ExitStatus.backupIncomplete.rawValue)
    }

    private func write(into fd: Int32, replacing target: String, password: SecureBuffer, root: String, client: ControlClient,
                       status: DeviceStatus) throws -> (files: Int, items: Int, damaged: [String]) {
        let stream = try SealingStream(fd: fd, password: password)
        password.wipe()
        let progress = ProgressLine()
        defer { progress.end() }
        try stream.writeRecord(BackupRecord(.device, [
            "defaultProtection": Array(status.defaultProtection.utf8),
            "dpfsVersion": Array(DPFSVersion.current.utf8),
            "created": Array(DeviceEvent.utcTimestamp().utf8),
        ]))
        var records = 1
        var items = 0
        try client.receive(.keychainExport) { reply, secrets in
            try Interruption.check()
            if let app = reply.app {
                var fields: [String: [UInt8]] = ["bundleID": Array(app.utf8), "sandboxApp": reply.sandboxApp == true ? [1] : [0]]
                if let plist = reply.entitlements { fields["entitlements"] = Array(plist) }
                try stream.writeRecord(BackupRecord(.app, fields))
            } else if let item = reply.keychain?.items.first, let attributes = item.attributes, secrets.count == 1 {
                try stream.writeRecord(BackupRecord(.item, attributes.mapValues { Array($0.utf8) }))
                try stream.writePiece(secrets[0].bytes)
                try stream.endContent()
                items += 1
            } else {
                return false  // the end of the export
            }
            records += 1
            return true
        }
        // The file being written and the one it will replace: a backup into the sandbox
        // leaves out both, the earlier backup at its path too.
        var left: [(device: UInt64, inode: UInt64)] = []
        var info = stat()
        if fstat(fd, &info) == 0 { left.append((UInt64(info.st_dev), UInt64(info.st_ino))) }
        if stat(target, &info) == 0 { left.append((UInt64(info.st_dev), UInt64(info.st_ino))) }
        let archiver = SandboxArchiver(root: root, into: stream, leavingOut: left)
        archiver.skipDamaged = skipDamaged
        archiver.progress = { [unowned archiver] in
            try Interruption.check()
            progress.update("backing up: \(archiver.files) files, \(ProgressLine.size(stream.plaintextBytes))")
        }
        try archiver.archive()
        records += archiver.records
        try stream.writeRecord(BackupRecord(.end, ["count": Array(String(records).utf8)]))
        try stream.finish()
        if archiver.skipped > 0 {
            FileHandle.standardError.write(Data("note: \(archiver.skipped) FIFOs, sockets or device nodes were left out\n".utf8))
        }
        if archiver.vanished > 0 {
            let note = "note: \(archiver.vanished) files, directories or links removed during the backup were left out\n"
            FileHandle.standardError.write(Data(note.utf8))
        }
        return (archiver.files, items, archiver.damaged)
    }

    /// A class key gone in the middle (the device locked) is the device-locked status; a
    /// file that cannot be read (EIO) is damaged, and the user is told the ways on.
    static func explain(_ error: any Error, root: String, device: String) -> any Error {
        if let failure = error as? SystemError, failure.code == EPERM {
            return CLIError("the device at \(root) locked during the backup (\(failure)); no backup was written",
                            status: .deviceLocked)
        }
        if let failure = error as? SystemError, failure.code == EIO {
            return CLIError("\(failure): the file is damaged (`dpfs fsck \(device)` names it, and its --salvage recovers "
                            + "what is readable); move or remove it, or back up with --skip-damaged to leave it out; "
                            + "no backup was written")
        }
        if error is CLIError || error is ControlClientError { return error }
        return CLIError("\(error); no backup was written")
    }
}

/// A new file beside `target`, mode 0600, that becomes `target` only on commit. Where
/// the filesystem allows, it has no name until then (O_TMPFILE): a backup killed
/// outright (SIGKILL, the OOM killer), which removes nothing itself, leaves nothing
/// behind, where a named file of the backup's size stayed.
final class TemporaryOutput {
    let fd: Int32
    let target: String
    /// The named file's path; nil while the file is unnamed.
    private var path: String?
    private var isOpen = true

    init(beside target: String) throws {
        self.target = target
        let directory = (target as NSString).deletingLastPathComponent
        let unnamed = dpfs_open_tmpfile(AT_FDCWD, directory, 0o600)
        if unnamed >= 0 {
            fd = unnamed
            return
        }
        // EOPNOTSUPP, EISDIR (an old kernel), EINVAL: a filesystem without unnamed files.
        var template = Array(Self.namePattern(of: target).utf8CString)
        let named = mkstemp(&template)
        guard named >= 0, fcntl(named, F_SETFD, FD_CLOEXEC) == 0 else {
            throw CLIError("cannot create a file beside \(target): \(String(cString: strerror(errno)))")
        }
        fd = named
        path = String(decoding: template.dropLast().map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    private static func namePattern(of target: String) -> String {
        let directory = (target as NSString).deletingLastPathComponent
        return "\(directory)/.\((target as NSString).lastPathComponent).tmp-XXXXXX"
    }

    /// The file is synced already (SealingStream.finish); named if it is not, renamed
    /// over the target, then the directory synced. On failure the caller discards it.
    func commit() throws {
        if path == nil { try giveName() }
        closeOnce()
        guard let path else { return }
        try BackupTarget.checkUnchanged(target)
        guard rename(path, target) == 0 else { throw CLIError("cannot write \(target): \(String(cString: strerror(errno)))") }
        try? AtomicFile.syncDirectory(of: target)
    }

    /// Links the unnamed file under a new hidden name beside the target (linkat cannot
    /// replace), for the rename; the name exists only for that moment.
    private func giveName() throws {
        let letters = Array("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")
        for _ in 0..<16 {
            let suffix = String((0..<6).map { _ in letters[Int.random(in: 0..<letters.count)] })
            let name = String(Self.namePattern(of: target).dropLast(6)) + suffix
            if linkat(AT_FDCWD, procPath(fd), AT_FDCWD, name, AT_SYMLINK_FOLLOW) == 0 {
                path = name
                return
            }
            guard errno == EEXIST else { break }
        }
        throw CLIError("cannot write \(target): \(String(cString: strerror(errno)))")
    }

    func discard() {
        closeOnce()
        if let path { unlink(path) }
    }

    /// A second close could close a descriptor opened since under the same number.
    private func closeOnce() {
        if isOpen { close(fd) }
        isOpen = false
    }
}
