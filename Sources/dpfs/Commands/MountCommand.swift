// dpfs mount: boots the device and serves the sandbox. Without --foreground it starts
// itself again as a daemon in a new session (no fork once the Swift runtime is up) and
// returns once the mount is ready, or reports why the daemon failed.
import ArgumentParser
import DataProtection
import Foundation
import DPFSProtocol
import Glibc
import Logging

struct Mount: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Mount a device's sandbox; it starts before first unlock, like a boot.")

    @Argument(help: "The device directory made by dpfs init.") var deviceDirectory: String
    @Argument(help: "An existing directory to mount on.") var mountpoint: String
    @Flag(help: "Stay attached to the terminal instead of running in the background.") var foreground = false
    // Numbers taken as they come, dash and all (.unconditional): "-1" read as an option
    // was "a missing value", not the option's own refusal of a negative number.
    @Option(parsing: .unconditional, help: "Seconds between lock and the wipe of class keys.") var gracePeriod: Double = 10
    @Option(name: .customShort("o"), help: "FUSE mount options, comma-separated (allow_other, ro, …).")
    var options: [String] = []
    @Option(help: "The least severe messages logged: debug, info, notice, warning, error.")
    var logLevel: String = "info"
    @Option(parsing: .unconditional, help: "Hours locked after which the device restarts, as iOS 18 does (0: never).")
    var inactivityReboot: Double = 72
    @Option(parsing: .unconditional,
            help: ArgumentHelp("Hours locked after which completeWhenUserInactive files are unavailable until the next unlock.",
                               valueName: "hours"))
    var userInactivePeriod: Double = LockStateManager.defaultUserInactivePeriod / 3600
    @Option(help: ArgumentHelp("Lock when logind says so: screen-lock, suspend, logout (comma-separated).",
                               valueName: "events"))
    var lockOn: String?
    @Option(help: .hidden) var readyFD: Int32?
    /// A command's own mount (restore's) ends with the command, however it ends.
    @Option(help: .hidden) var endWith: Int32?

    var lockTriggers: Set<LockTrigger> {
        guard let lockOn, case .success(let triggers) = LockTrigger.parse(lockOn) else { return [] }
        return triggers
    }

    /// The options for libfuse: all but dpfs's own "nonempty".
    var fuseOptions: [String] {
        options.map { $0.split(separator: ",").filter { $0 != "nonempty" }.joined(separator: ",") }.filter { !$0.isEmpty }
    }

    func validate() throws {
        if let lockOn, case .failure(let unknown) = LockTrigger.parse(lockOn) {
            throw ValidationError("--lock-on takes screen-lock, suspend and logout, not '\(unknown.word)'")
        }
        if gracePeriod < 0 || !gracePeriod.isFinite { throw ValidationError("--grace-period needs a non-negative number of seconds") }
        if Logger.Level(rawValue: logLevel) == nil || logLevel == "trace" || logLevel == "critical" {
            throw ValidationError("--log-level takes debug, info, notice, warning or error, not '\(logLevel)'")
        }
        if inactivityReboot < 0 || !inactivityReboot.isFinite {
            throw ValidationError("--inactivity-reboot needs a non-negative number of hours")
        }
        if userInactivePeriod <= 0 || !userInactivePeriod.isFinite {
            throw ValidationError("--user-inactive-period needs a positive number of hours")
        }
    }

    func run() throws {
        let directory = DeviceDirectory(deviceDirectory)
        let target = AbsolutePath.of(mountpoint)
        try MountOptionCheck.check(fuseOptions, lockOn: lockOn)
        try UserAllowOther.check(fuseOptions)
        guard directory.isInitialised else { throw CLIError(DeviceError.notInitialised(directory.root)) }
        switch DeadMount.find(at: target) {
        case .dead(let dead)?:
            // A mount left failing closed by a daemon that died: this mount takes its place.
            try DeadMount.takeDown(at: dead)
            print("took down the dead mount a daemon that died left at \(dead)")
        case .unanswered(let shown)?:
            throw CLIError("\(target) already has a dpfs mount; " + DaemonDeadline.silence(of: shown))
        case nil:
            break
        }
        // Before the directory's stat: a dpfs mount there is told by the mount table alone.
        if ControlClient.isMounted(target) {
            throw CLIError("\(target) already has a dpfs mount")
        }
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: target, isDirectory: &isDirectory), isDirectory.boolValue else {
            throw CLIError("mountpoint \(target) does not exist or is not a directory")
        }
        try DeviceNesting.refuse("mountpoint", target, of: directory, else: "mount the device elsewhere")
        // As gocryptfs does: files under the mount would be hidden, and a mistyped
        // mount point (a home directory) is caught. libfuse 3 takes no "nonempty".
        let overNonEmpty = options.flatMap { $0.split(separator: ",") }.contains("nonempty")
        if !overNonEmpty, let entries = try? FileManager.default.contentsOfDirectory(atPath: target), !entries.isEmpty {
            throw CLIError("mountpoint \(target) is not empty; mount over it with -o nonempty", status: .mountPointNotEmpty)
        }
        if foreground {
            var daemon = Daemon(directory: directory, mountpoint: target, gracePeriod: gracePeriod,
                                options: fuseOptions, lockTriggers: lockTriggers,
                                inactivityReboot: inactivityReboot > 0 ? inactivityReboot * 3600 : nil,
                                logLevel: Logger.Level(rawValue: logLevel) ?? .info, readyFD: readyFD)
            daemon.userInactivePeriod = userInactivePeriod * 3600
            daemon.owner = endWith
            throw ExitCode(daemon.run())
        }
        try spawnDaemon(directory: directory, mountpoint: target)
    }

    /// A daemon.log past 1 MiB becomes daemon.log.1 (the one before goes), so that a
    /// device mounted for months keeps two bounded logs.
    static func rotate(_ logPath: String, limit: Int = 1 << 20) {
        var info = stat()
        guard stat(logPath, &info) == 0, Int(info.st_size) > limit else { return }
        rename(logPath, logPath + ".1")
    }

    private func spawnDaemon(directory: DeviceDirectory, mountpoint: String) throws {
        var pipeFDs: [Int32] = [0, 0]
        guard pipe(&pipeFDs) == 0 else { throw CLIError("cannot create a pipe: \(String(cString: strerror(errno)))") }
        let (readEnd, writeEnd) = (pipeFDs[0], pipeFDs[1])
        _ = fcntl(readEnd, F_SETFD, FD_CLOEXEC)
        var arguments = ["dpfs", "mount", directory.root, mountpoint, "--foreground",
                         "--grace-period", String(gracePeriod), "--ready-fd", String(DaemonSpawner.readyDescriptor)]
        for option in options { arguments += ["-o", option] }
        if let lockOn { arguments += ["--lock-on", lockOn] }
        arguments += ["--inactivity-reboot", String(inactivityReboot), "--log-level", logLevel]
        arguments += ["--user-inactive-period", String(userInactivePeriod)]
        if let endWith { arguments += ["--end-with", String(endWith)] }
        let logPath = directory.daemonLogPath
        Self.rotate(logPath)
        let pid = try DaemonSpawner.spawn(arguments: arguments, logPath: logPath, readyPipe: writeEnd)
        close(writeEnd)
        var reply = [UInt8]()
        var byte: UInt8 = 0
        // One line: the daemon's helpers (fusermount3) may hold the pipe open longer.
        while Glibc.read(readEnd, &byte, 1) == 1 && byte != UInt8(ascii: "\n") { reply.append(byte) }
        close(readEnd)
        let text = String(decoding: reply, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        if text == "ok" {
            print("mounted \(directory.root) on \(mountpoint) (daemon pid \(pid))")
            return
        }
        var status: Int32 = 0
        waitpid(pid, &status, 0)
        // The daemon exits with the status its failure has (ExitStatus), and so does this.
        let exited = status & 0x7f == 0 ? ExitStatus(rawValue: (status >> 8) & 0xff) : nil
        throw CLIError(text.isEmpty ? "the dpfs daemon exited before the mount was ready; see \(logPath)" : text,
                       status: exited ?? .failure)
    }
}
