// Who a new node belongs to. A daemon running as root makes every node as root; a
// local filesystem gives it the calling user, and in a setgid directory the
// directory's group (which the backing node inherited already).
import BlockStore
import Glibc
import SystemCalls

struct Ownership: Sendable {
    let daemonUID = geteuid()
    let daemonGID = getegid()

    /// Whether the daemon must give new nodes the caller's owner (it runs as root).
    var ownsForCallers: Bool { daemonUID == 0 }

    /// Gives the node `name` in `parent`, or the open node `fd`, to the caller. `mode`
    /// is the mode a node that is not a directory or symlink was made with: chown takes
    /// a non-directory's set-ID bits, which the caller asked for and the kernel let
    /// through (it strips a setgid bit the caller may not set).
    func take(_ caller: Caller, parent: Inode, name: UnsafePointer<CChar>? = nil, fd: Int32? = nil, mode: mode_t? = nil) {
        guard ownsForCallers else { return }
        // Made by the daemon's own user and group, the node is the caller's already.
        if caller.uid == daemonUID && caller.gid == daemonGID { return }
        var directory = stat()
        let statted = (try? parent.systemCall { fstatat($0, "", &directory, AtFlag.emptyPath) }) != nil
        let setgid = statted && directory.st_mode & S_ISGID != 0
        let gid = setgid ? gid_t.max : caller.gid
        if let fd {
            guard fchown(fd, caller.uid, gid) == 0 else { return }
            if let mode, mode & (S_ISUID | S_ISGID) != 0 { _ = fchmod(fd, mode & 0o7777) }
        } else if let name {
            _ = try? parent.withDescriptor { parentFD in
                guard fchownat(parentFD, name, caller.uid, gid, AT_SYMLINK_NOFOLLOW) == 0 else { return }
                if let mode, mode & (S_ISUID | S_ISGID) != 0 { _ = fchmodat(parentFD, name, mode & 0o7777, 0) }
            }
        }
    }
}
