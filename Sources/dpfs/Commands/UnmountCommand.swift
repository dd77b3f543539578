// dpfs unmount: unmounts and waits for the daemon to finish. With the hidden
// --when-closed and --connection, it is a mount's guard (SandboxFS/UnmountGuard.swift):
// it waits for the daemon to end, then takes down a mount the daemon left behind.
import ArgumentParser
import Control
import Foundation
import Glibc
import SandboxFS

struct Unmount: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Unmount a sandbox and stop its daemon.")
    @Argument(help: "The mountpoint.") var mountpoint: String
    @Option(help: .hidden) var whenClosed: Int32?
    @Option(help: .hidden) var connection: String?

    func run() throws {
        let target = absolutePath(mountpoint)
        if let whenClosed, let connection { return guardMount(target, daemonPipe: whenClosed, device: connection) }
        let pid = (try? ControlClient(mountpoint: target).send(.status))?.status?.pid
        guard pid != nil || isMountpoint(target) else { throw CLIError("\(target) is not a mounted dpfs sandbox") }
        if !fusermountUnmount(target, lazily: false) && umount(target) != 0 {
            throw CLIError("cannot unmount \(target): \(String(cString: strerror(errno)))")
        }
        // Wait for the daemon to flush and exit, so the device can be mounted again.
        if let pid {
            for _ in 0..<200 where kill(pid, 0) == 0 { usleep(50_000) }
        }
    }

    /// Waits on `daemonPipe` until the daemon says it has unmounted or its process ends
    /// without saying so; then detaches the mount at `target` if it is still the
    /// daemon's (the connection `device`). Anything else mounted there stays.
    private func guardMount(_ target: String, daemonPipe: Int32, device: String) {
        // Not ended with the terminal or session it came from: it has its own session.
        signal(SIGHUP, SIG_IGN)
        signal(SIGINT, SIG_IGN)
        if UnmountGuard.awaitDaemonEnd(daemonPipe) { return }
        guard MountTable.topmost(at: target)?.device == device else { return }
        // Detached, not unmounted: a process still inside the dead mount must not keep
        // it in place. Only root may unmount directly; a user's mount goes through
        // fusermount3, which checks that it is theirs.
        if geteuid() == 0 && detachAsRoot(target, device: device) { return }
        if !fusermountUnmount(target, lazily: true) {
            FileHandle.standardError.write(Data("dpfs: the daemon ended without unmounting \(target), and it could not be unmounted\n".utf8))
        }
    }

    /// Detaches the mount of `device` at `target`, reached as fusermount3 reaches it:
    /// from its parent directory, which must still be the directory the mount table
    /// names (no component of the path swapped for a symlink meanwhile), the last
    /// component not followed. The last component cannot be renamed or replaced while
    /// it is mounted on. True if detached.
    private func detachAsRoot(_ target: String, device: String) -> Bool {
        let parent = URL(fileURLWithPath: target).deletingLastPathComponent().path
        let last = URL(fileURLWithPath: target).lastPathComponent
        guard chdir(parent) == 0, let here = realpath(".", nil) else { return false }
        defer { free(here) }
        guard String(cString: here) == parent, MountTable.topmost(at: target)?.device == device else { return false }
        return umount2(last, Int32(MNT_DETACH) | Int32(UMOUNT_NOFOLLOW)) == 0
    }

    /// fusermount3 -u (-z): true if it unmounted.
    private func fusermountUnmount(_ target: String, lazily: Bool) -> Bool {
        let fusermount = Process()
        fusermount.executableURL = URL(fileURLWithPath: "/bin/fusermount3")
        fusermount.arguments = lazily ? ["-u", "-z", target] : ["-u", target]
        fusermount.standardError = FileHandle.nullDevice
        guard (try? fusermount.run()) != nil else { return false }
        fusermount.waitUntilExit()
        return fusermount.terminationStatus == 0
    }

    private func isMountpoint(_ path: String) -> Bool {
        let mounts = (try? String(contentsOfFile: "/proc/self/mounts", encoding: .utf8)) ?? ""
        return mounts.split(separator: "\n").contains { line in
            let fields = line.split(separator: " ")
            return fields.count > 2 && fields[1] == Substring(path) && fields[2].hasPrefix("fuse.dpfs")
        }
    }
}
