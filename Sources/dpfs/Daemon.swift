// The mounted daemon: boots the device (keybag, class keys available without a
// passcode), opens the item store, starts the control socket and serves the sandbox
// until unmounted.
import BlockStore
import CLinux
import Control
import DPFSProtocol
import DataProtection
import Foundation
import Glibc
import ItemStore
import KeychainSync
import Logging
import SandboxFS

struct Daemon {
    let directory: DeviceDirectory
    let mountpoint: String
    let gracePeriod: Double
    let options: [String]
    /// The logind events that lock the device (--lock-on); none: only `dpfs lock` does.
    let lockTriggers: Set<LockTrigger>
    /// Seconds locked after which the device restarts; nil: never.
    let inactivityReboot: TimeInterval?
    /// Seconds locked after which completeWhenUserInactive's key goes (--user-inactive-period).
    var userInactivePeriod: TimeInterval = LockStateManager.defaultUserInactivePeriod
    /// The least severe level logged (mount --log-level).
    let logLevel: Logger.Level
    let readyFD: Int32?
    /// The process whose end stops the daemon as a signal would (mount --end-with).
    var owner: pid_t?

    func run() -> Int32 {
        let (device, mounted, level) = (directory.root, mountpoint, logLevel)
        LoggingSystem.bootstrap { DaemonLog.handler(label: $0, level: level, device: device, mountpoint: mounted) }
        var logger = Logger(label: "dpfs")
        logger.logLevel = level
        // Keys live in this process: no core dumps, no ptrace by other users.
        _ = dpfs_set_not_dumpable()
        _ = dpfs_scrub_freed_memory()
        _ = dpfs_share_malloc_arenas(2)
        _ = dpfs_keep_heap_until_idle()
        if let readyFD { _ = fcntl(readyFD, F_SETFD, FD_CLOEXEC) }
        // The caller's umask is applied to the mode of every create, mkdir and mknod
        // (by the daemon, or where a default ACL applies not at all: PosixACL.swift);
        // the umask inherited from the shell that ran `dpfs mount` must not strip it a
        // second time. Set before any thread starts; the daemon's own files (keybag,
        // socket, its directory) pass explicit modes.
        umask(0)
        do {
            let lockFD: Int32
            do { lockFD = try directory.takeMountLock() } catch { throw CLIError(error, adding: "; unmount it first") }
            defer { close(lockFD) }
            // Before the boot reads the secret store: a copy refused here moves nothing on.
            let useFD: Int32?
            do { useFD = try DeviceUseLock.take(for: directory) } catch let error as DeviceError {
                throw CLIError(error, adding: "; unmount it first")
            }
            defer { if let useFD { close(useFD) } }
            #if DPFS_TEST_HOOKS
            let testHooks = TestHooks.fromEnvironment()
            #else
            let testHooks = TestHooks()
            #endif
            let device = try LockStateManager(directory: directory, gracePeriod: gracePeriod,
                                              inactivityReboot: inactivityReboot,
                                              userInactivePeriod: userInactivePeriod, testHooks: testHooks)
            // Before anything can lock: a lock's deadlines need no thread found later.
            try device.startDeadlineThread()
            if let notice = device.bootNotice { logger.warning("\(notice)") }
            // The refusals come before anything in the device directory changes: a user
            // who puts an old copy back and is refused finds it as it was, and so does
            // whoever looks for the rollback. The keychain's checks change no file.
            let keychain = try Self.hintingSalvage(directory) {
                try ItemStore.verify(path: directory.itemStorePath, device: device)
            }
            try SyncEngine.checkState(in: directory)
            for build in LeftoverBuild.remove(from: directory) {
                logger.notice("removed \(build), the build directory a killed init or restore left in the finished device")
            }
            let place = try Self.socketPlace()
            defer {
                if let temporary = place.temporary {
                    unlink(place.socket)
                    rmdir(temporary)
                }
            }
            let logind = lockTriggers.isEmpty ? nil : try LogindWatch(
                device: device, triggers: lockTriggers,
                source: SessionSource(sessionID: ProcessInfo.processInfo.environment["XDG_SESSION_ID"], uid: getuid()),
                logger: logger)
            defer { logind?.stop() }
            if let notice = place.notice { logger.warning("\(notice)") }
            // Not open yet: opening it for writing changes the file, even with nothing
            // written, so it opens once the mount stands (below).
            let items = ItemStore(verified: keychain, device: device)
            if let problem = items.user.recordProblem {
                logger.warning("\(problem): nothing is enrolled until the next dpfs biometry enroll")
            }
            let sync = try SyncEngine(directory: directory, device: device, items: items)
            var lockFollowing: (@Sendable () -> LockFollowing)?
            if let logind { lockFollowing = { logind.status } }
            let server = try ControlServer(socketPath: place.socket, device: device, items: items, sync: sync,
                                           lockFollowing: lockFollowing,
                                           served: { MountSession.noteOutsideRequest() },
                                           log: { [logger] in logger.warning("\($0)") })
            let session: MountSession
            do {
                let fileSystem = try SandboxFileSystem(device: device, controlSocketPath: server.socketPath, logger: logger)
                session = try MountSession(fileSystem: fileSystem, mountpoint: mountpoint, options: options)
                // The last step that may fail: a mount that FUSE refuses, or any step above
                // that fails, leaves the keychain's files as it found them.
                do { try Self.hintingSalvage(directory) { try items.open() } } catch {
                    session.unmountUnserved()
                    throw error
                }
            } catch {
                // Only a later daemon would clear the socket of one gone, and a failed
                // mount may have none after it: the socket goes with the failure.
                server.stop()
                throw error
            }
            // Stopped by a signal (a service's stop, a shutdown): as a phone powering off,
            // every protected class goes first, with what the kernel cached of it, while
            // the mount still serves; then the unmount, lazy if files are busy.
            session.beforeStop = { [logger] signal in
                logger.notice("signal \(signal): the device restarts (every protected class is taken away) before the unmount")
                device.restart()
            }
            session.onDetached = { [logger] in
                logger.notice("the mount was taken from \(mountpoint) with files in it busy: no dpfs command can lock it now, so the device restarts (every protected class is taken away)")
                device.restart()
            }
            server.start()
            do { try sync.start() } catch {
                logger.warning("keychain sync: \(error); it does not run until a dpfs sync command can start it")
            }
            logind?.start()
            logger.info("mounted \(directory.root) on \(mountpoint), state \(device.phase.rawValue)")
            if let owner { session.whenListening = { OwnerWatch.start(owner: owner, logger: logger) } }
            signalReady("ok")
            let rc = session.serve()
            server.stop()
            sync.stop()
            do {
                try items.settle()
                try items.close()
            } catch {
                logger.warning("\(error)")
            }
            logger.info("unmounted \(mountpoint)")
            return rc == 0 ? 0 : 1
        } catch {
            if readyFD == nil {
                // In the foreground the terminal gets the one "Error:" line every command
                // prints (signalReady), not a log line of it too; the journal keeps its record.
                if JournalLogHandler.isAvailable {
                    Logger(label: "dpfs") { JournalLogHandler(label: $0, device: device, mountpoint: mounted) }.error("\(error)")
                }
            } else {
                logger.error("\(error)")
            }
            signalReady("\(error)")
            return ExitStatus.of(error).rawValue
        }
    }

    /// Runs `body`, adding to a refusal of the keychain how the sandbox's files are
    /// still had: they do not depend on it, and fsck copies them out whatever its state.
    private static func hintingSalvage<T>(_ directory: DeviceDirectory, _ body: () throws -> T) throws -> T {
        do { return try body() } catch {
            guard error is KeychainDamage || ExitStatus.of(error) == .rollbackRefused else { throw error }
            throw CLIError(error, adding: "; dpfs fsck \(directory.root) --salvage DIR copies out the sandbox's files")
        }
    }

    private func signalReady(_ text: String) {
        guard let readyFD else {
            if text != "ok" { FileHandle.standardError.write(Data("Error: \(text)\n".utf8)) }
            return
        }
        let line = Array((text + "\n").utf8)
        _ = line.withUnsafeBytes { Glibc.write(readyFD, $0.baseAddress, $0.count) }
        close(readyFD)
    }

    /// Where the control socket goes: a private directory, /run/dpfs for root, else the
    /// user's runtime directory (SocketPlaces.runtime), else /tmp/dpfs-UID. Another
    /// user may have made /tmp/dpfs-UID first (anyone can create names in /tmp): then a
    /// new private directory of mkdtemp's is used instead, `temporary`, to remove at the
    /// end. The client finds the socket through the mount, so any private directory serves.
    static func socketPlace() throws -> (socket: String, temporary: String?, notice: String?) {
        let uid = getuid()
        let base: String
        var shared = false
        var passedOver: String?
        let runtime = SocketPlaces.runtime()
        if uid == 0 {
            base = SocketPlaces.root
        } else if let runtime, holdsSockets(runtime.directory) {
            base = runtime.directory
        } else {
            base = SocketPlaces.shared(uid)
            shared = true
            if let runtime {
                passedOver = "XDG_RUNTIME_DIR (\(runtime.variable)) is too long for a socket path; "
            } else if let variable = ProcessInfo.processInfo.environment["XDG_RUNTIME_DIR"], !variable.isEmpty {
                passedOver = "XDG_RUNTIME_DIR (\(variable)) is not an absolute path; "
            }
        }
        if mkdir(base, 0o700) != 0 && errno != EEXIST { throw SystemError("mkdir", base) }
        var st = stat()
        if lstat(base, &st) == 0, st.st_uid == uid, st.st_mode & S_IFMT == S_IFDIR, st.st_mode & 0o077 == 0 {
            SocketDirectory.removeStaleSockets(in: base)
            return (base + "/\(getpid()).sock", nil, passedOver.map { $0 + "the control socket is in \(base) instead" })
        }
        guard shared else { throw CLIError("\(base) must be a directory owned by uid \(uid) with mode 0700") }
        var template = Array(SocketPlaces.privateTemplate(uid).utf8CString)
        guard let made = mkdtemp(&template) else { throw SystemError("mkdtemp", SocketPlaces.privateTemplate(uid)) }
        let directory = String(cString: made)
        return (directory + "/\(getpid()).sock", directory,
                "\(base) is not a private directory of uid \(uid) (another user made it?); "
                    + "the control socket is in \(directory) instead")
    }

    /// Whether the sockets the daemon binds in `directory` fit a socket address: an app
    /// session's name, PID.app-UUID.sock, is the longest of them.
    static func holdsSockets(_ directory: String) -> Bool {
        UnixAddress(path: directory + "/\(getpid()).app-\(UUID().uuidString).sock") != nil
    }
}
