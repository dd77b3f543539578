// dpfs unmount: unmounts and waits for the daemon to finish. With the hidden
// --when-closed and --source it is instead a mount's daemon watch
// (UnmountCommand+Watch.swift).
import ArgumentParser
import DPFSProtocol
import DataProtection
import Foundation
import Glibc

struct Unmount: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Unmount a sandbox and stop its daemon.")
    @Argument(help: "The mountpoint.") var mountpoint: String
    @Option(help: .hidden) var whenClosed: Int32?
    @Option(help: .hidden) var source: String?

    func validate() throws {
        if (whenClosed == nil) != (source == nil) {
            throw ValidationError("--when-closed and --source are the guard's, given together by the daemon")
        }
    }

    func run() throws {
        if let whenClosed, let source {
            // The daemon gives the path as the mount table shows it: taken as it is, as
            // resolving it would ask the mount (whose daemon may not serve) about its root.
            return watchDaemon(mountpoint, daemonPipe: whenClosed, source: source)
        }
        switch DeadMount.find(at: mountpoint) {
        case .dead(let dead)?:
            try DeadMount.takeDown(at: dead)
            print("the daemon of \(dead) had died; its dead mount is taken down")
            return
        case .unanswered(let target)?:
            // Neither its app sessions nor its end can be waited for: the user chooses.
            throw CLIError(DaemonDeadline.silence(of: target) + "; not unmounted: run the command again once it answers, "
                           + "or detach the mount now with fusermount3 -u -z \(target) (its daemon ends once it resumes)")
        case nil:
            break
        }
        let target = AbsolutePath.of(mountpoint)
        let client = (try? DaemonDeadline.client(for: target)) ?? Self.rootClient(for: target)
        let reply = try? client?.send(.status)
        let pid = reply?.status?.pid
        guard pid != nil || isMountpoint(target) else {
            throw CLIError("\(target) is not a mounted dpfs sandbox", status: .notADpfsMount)
        }
        // A program run as an app works in its own mount namespace, which holds the
        // mount there whatever the host's umount does: the mount would go from under it,
        // and the daemon wait for it, restarting the device. The daemon opens no app
        // session while this connection stays open, once it has found none (a daemon
        // that does not know the request has listed them in its status).
        let runs = (try? client?.send(.unmounting))?.runs ?? reply?.runs ?? []
        if !runs.isEmpty {
            throw CLIError(Self.refusal(of: target, running: runs))
        }
        try withExtendedLifetime(client) { try detach(target, daemon: pid) }
    }

    /// Unmounts `target` and waits for its daemon, `pid`, to end.
    private func detach(_ target: String, daemon pid: Int32?) throws {
        let fusermount = Self.fusermountUnmounting(target, lazily: false)
        if fusermount.status != 0 && umount(target) != 0 {
            // A user's umount(2) fails for want of privilege; fusermount3 said why it failed.
            let reason = errno
            let busy = reason == EBUSY || fusermount.said.contains(String(cString: strerror(EBUSY)))
            let said = fusermount.said.split(separator: "\n").first.map(String.init) ?? ""
            let why = reason == EPERM && !said.isEmpty ? said : String(cString: strerror(reason))
            throw CLIError(Self.refusal(of: target, busy: busy, why: why))
        }
        // Wait for the daemon to flush and exit, so the device can be mounted again; on a
        // loaded machine, or with much to flush, that can take a while, and a script
        // that mounts right after must not meet the device still held.
        if let pid {
            for _ in 0..<1200 where kill(pid, 0) == 0 { usleep(50_000) }
            if kill(pid, 0) == 0 {
                FileHandle.standardError.write(Data(
                    "dpfs: unmounted; its daemon (pid \(pid)) is still finishing, and holds the device until it ends\n".utf8))
            }
        }
    }

    /// Why `target` was not unmounted (`why`, unless it is busy): when it is busy, what
    /// holds it (as far as this user may see) and the two ways on.
    static func refusal(of target: String, busy: Bool, why: String) -> String {
        let holders = MountHolders.find(under: target)
        guard busy || !holders.isEmpty else { return "cannot unmount \(target): \(why)" }
        let held = holders.isEmpty ? "it is busy (fuser -vm \(target) names what holds it)"
                                   : "it is busy: \(MountHolders.describe(holders))"
        return "cannot unmount \(target): \(held); end those processes or move them out, then unmount again, "
            + detachingNow(target)
    }

    /// Why `target` is not unmounted while programs run in it as apps: which, and the
    /// two ways on.
    static func refusal(of target: String, running runs: [AppRun]) -> String {
        "cannot unmount \(target): programs run in it as apps: \(AppRunHolders.describe(runs)); "
            + "end them, then unmount again, " + detachingNow(target)
    }

    private static func detachingNow(_ target: String) -> String {
        "or detach it now with fusermount3 -u -z \(target) (the device then restarts: every protected class goes)"
    }

    /// fusermount3 -u (-z): its exit status (0 if it unmounted; -1 if it did not run).
    static func fusermountUnmount(_ target: String, lazily: Bool) -> Int32 {
        fusermountUnmounting(target, lazily: lazily).status
    }

    /// fusermount3 -u (-z): its exit status, as fusermountUnmount's, and what it said.
    static func fusermountUnmounting(_ target: String, lazily: Bool) -> (status: Int32, said: String) {
        let fusermount = Process()
        fusermount.executableURL = URL(fileURLWithPath: "/bin/fusermount3")
        fusermount.arguments = lazily ? ["-u", "-z", target] : ["-u", target]
        let said = Pipe()
        fusermount.standardError = said
        guard (try? fusermount.run()) != nil else { return (-1, "") }
        // Read before the wait: a line or two, but a full pipe would never end it.
        let bytes = said.fileHandleForReading.readDataToEndOfFile()
        fusermount.waitUntilExit()
        return (fusermount.terminationStatus, String(decoding: bytes, as: UTF8.self))
    }

    /// Root's connection to the daemon of another user's mount at `target`, as that
    /// user's own unmount asks it whether programs run in it as apps; nil for anyone
    /// else, or when that daemon cannot be reached. Its replies have a deadline: a
    /// stopped daemon is unmounted as before, not waited for.
    private static func rootClient(for target: String) -> ControlClient? {
        guard getuid() == 0, let entry = MountTable.topmost(at: target), entry.fsType == MountEntry.dpfsType,
              let owner = entry.fuseOwner, owner != 0, let daemon = DaemonProcess.find(mountpoint: target),
              let client = try? ControlClient(rootTo: daemon.pid, owner: owner, mountpoint: target,
                                              timeout: DaemonDeadline.seconds) else { return nil }
        client.setTimeout(seconds: DaemonDeadline.seconds)
        return client
    }

    private func isMountpoint(_ path: String) -> Bool {
        MountTable.entries().contains { $0.mountPoint == path && $0.fsType == MountEntry.dpfsType }
    }
}
