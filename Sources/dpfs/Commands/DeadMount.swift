// A dpfs mount whose daemon died. It stays in place, failing closed, until the user
// takes it down: `dpfs unmount` on it, or the next `dpfs mount` there, which mounts
// in its place (DaemonWatch.swift says why it is not taken down at once).
// Telling a dead mount asks the mount (statfs), which a live daemon answers and a
// stopped one never does: the question has DaemonDeadline's deadline.
import DataProtection
import DPFSProtocol
import Foundation
import Glibc
import SandboxFS

enum DeadMount {
    /// A dpfs mount that does not serve, at its resolved mount point.
    enum Finding: Equatable {
        /// Its daemon died.
        case dead(String)
        /// Its daemon did not answer within DaemonDeadline.seconds (stopped, or hung).
        case unanswered(String)
    }

    /// What `path` shows when it is a dpfs mount that does not serve; nil for a mount
    /// that answers, and for anything else.
    static func find(at path: String) -> Finding? {
        // realpath reads links, and never asks the mount's daemon about its root.
        guard let resolved = realpath(path, nil) else { return nil }
        let target = String(cString: resolved)
        free(resolved)
        // Only a dpfs mount is asked, as the mount table shows without touching it.
        guard MountTable.topmost(at: target)?.fsType == MountEntry.dpfsType else { return nil }
        guard let dead = DaemonDeadline.within({ DaemonWatch.showsDeadMount(at: target) }) else {
            return .unanswered(target)
        }
        return dead ? .dead(target) : nil
    }

    /// The resolved mount point if `path` shows a dead dpfs mount, else nil.
    static func shown(at path: String) -> String? {
        guard case .dead(let target)? = find(at: path) else { return nil }
        return target
    }

    /// Takes the dead mount at `target` (resolved) down. Detached, not unmounted: a
    /// process still inside it (a shell's cwd) must not keep it in place, and goes on
    /// failing there. Only root may unmount directly; a user's mount goes through
    /// fusermount3, which checks that it is theirs.
    static func takeDown(at target: String) throws(CLIError) {
        let failure: String?
        if geteuid() == 0 {
            failure = detachAsRoot(target)
        } else {
            let status = Unmount.fusermountUnmount(target, lazily: true)
            failure = status == 0 ? nil : "fusermount3 -u -z failed (exit status \(status))"
        }
        if let failure { throw CLIError("cannot take down the dead mount at \(target): \(failure)") }
    }

    /// Detaches the mount at `target` as fusermount3 reaches it: from its parent
    /// directory, which must still be the directory the mount table names (no
    /// component of the path swapped for a symlink meanwhile), the last component not
    /// followed. Nil if detached, else why not.
    private static func detachAsRoot(_ target: String) -> String? {
        guard let slash = target.lastIndex(of: "/"), target.index(after: slash) < target.endIndex else {
            return "not an absolute path"
        }
        let parent = slash == target.startIndex ? "/" : String(target[..<slash])
        let last = String(target[target.index(after: slash)...])
        let parentFD = open(parent, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard parentFD >= 0 else { return "\(parent): \(String(cString: strerror(errno)))" }
        defer { close(parentFD) }
        let here = open(".", O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard here >= 0, fchdir(parentFD) == 0 else { return "\(parent): \(String(cString: strerror(errno)))" }
        // Back where the command was, whatever happens: it goes on with relative paths.
        defer { _ = fchdir(here); close(here) }
        guard let resolved = realpath(".", nil) else { return "\(parent): \(String(cString: strerror(errno)))" }
        defer { free(resolved) }
        guard String(cString: resolved) == parent else { return "\(parent) is now \(String(cString: resolved))" }
        // Checked again from here: another mount may have been put there meanwhile.
        guard DaemonWatch.showsDeadMount(at: target) else { return nil }
        return umount2(last, Int32(MNT_DETACH) | Int32(UMOUNT_NOFOLLOW)) == 0 ? nil : String(cString: strerror(errno))
    }
}
