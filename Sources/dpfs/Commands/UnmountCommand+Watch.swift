// A mount's unmount guard (SandboxFS/UnmountGuard.swift): `dpfs unmount MOUNTPOINT
// --when-closed FD --source dpfs:DEVICE`, started by the daemon. It waits for the
// daemon to end, then takes down the mount if the daemon left it behind.
import DataProtection
import Foundation
import Glibc
import SandboxFS

extension Unmount {
    /// Waits on `daemonPipe` until the daemon says its mount is gone or its process ends
    /// without saying so; then detaches the mount at `target` if it is still the
    /// daemon's: the one it announced, or, if it announced none, a dead mount from
    /// `source`. Anything else mounted there stays.
    func guardMount(_ target: String, daemonPipe: Int32, source: String) {
        // Only the pipe ends it, as fusermount3's auto_unmount lets only its socket:
        // a SIGTERM to every process (shutdown, a service's stop) must not end it before
        // the daemon it outlives.
        for ignored in [SIGHUP, SIGINT, SIGTERM, SIGPIPE] { signal(ignored, SIG_IGN) }
        let announced: UnmountGuard.Identity?
        switch UnmountGuard.awaitDaemonEnd(daemonPipe) {
        case .unmounted: return
        case .vanished(let mount): announced = mount
        }
        let isDaemons = {
            announced.map { $0.isShown(at: target) } ?? UnmountGuard.showsDeadMount(at: target, source: source)
        }
        if announced != nil {
            guard isDaemons() else { return }
        } else {
            guard UnmountGuard.awaitDeadMount(at: target, source: source, seconds: 10) else { return }
            report("it named no mount, and a dead mount of its device was found at \(target): taking it down")
        }
        // Detached, not unmounted: a process still inside the dead mount must not keep
        // it in place. Only root may unmount directly; a user's mount goes through
        // fusermount3, which checks that it is theirs.
        if geteuid() == 0 {
            if let failure = detachAsRoot(target, isDaemons) { report("\(target) could not be unmounted: \(failure)") }
            return
        }
        let status = Self.fusermountUnmount(target, lazily: true)
        if status != 0 { report("fusermount3 -u -z \(target) failed (exit status \(status))") }
    }

    /// Detaches the daemon's mount at `target`, reached as fusermount3 reaches it: from its parent
    /// directory, which must still be the directory the mount table names (no
    /// component of the path swapped for a symlink meanwhile), the last component not
    /// followed. That component cannot be renamed or replaced while it is mounted on.
    /// Nil if detached, else why not.
    private func detachAsRoot(_ target: String, _ isDaemons: () -> Bool) -> String? {
        guard let slash = target.lastIndex(of: "/"), target.index(after: slash) < target.endIndex else {
            return "not an absolute path"
        }
        let parent = slash == target.startIndex ? "/" : String(target[..<slash])
        let last = String(target[target.index(after: slash)...])
        guard chdir(parent) == 0 else { return "\(parent): \(String(cString: strerror(errno)))" }
        guard let here = realpath(".", nil) else { return "\(parent): \(String(cString: strerror(errno)))" }
        defer { free(here) }
        guard String(cString: here) == parent else { return "\(parent) is now \(String(cString: here))" }
        // Checked again from here: another mount may have been put there meanwhile.
        guard isDaemons() else { return nil }
        return umount2(last, Int32(MNT_DETACH) | Int32(UMOUNT_NOFOLLOW)) == 0 ? nil : String(cString: strerror(errno))
    }

    private func report(_ text: String) {
        FileHandle.standardError.write(Data("dpfs: the daemon ended without unmounting; \(text)\n".utf8))
    }
}
