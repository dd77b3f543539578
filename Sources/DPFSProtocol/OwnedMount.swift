// Proof, before the CLI connects or sends a byte, that a path is a dpfs mount of the
// caller's and that the control socket its root names is the caller's.
// Any directory can answer getxattr(user.dpfs.control) with a socket of its choosing,
// so the attribute alone proves nothing; the kernel's mount table does:
//  - the path, resolved with realpath, is the root of a mount of type fuse.dpfs;
//  - the kernel recorded the caller as that FUSE mount's owner (user_id=UID);
//  - the attribute is asked of that very mount (the directory opened and matched to
//    the mount by its st_dev), so the mount's own daemon answers it;
//  - the socket it names is a socket (not a symlink) owned by the caller, in a
//    directory owned by the caller with no group or other access.
// ControlClient then checks the connection's peer (SO_PEERCRED) before its request.
import CLinux
import Foundation
import Glibc

struct OwnedMount {
    /// The mountpoint, resolved with realpath.
    let path: String
    let socketPath: String

    /// Why `given` is refused, as the end of "… refusing to send anything to it (WHY)".
    struct Refusal: Error {
        let reason: String
        /// The mount is a dpfs mount of the caller's whose daemon is gone (ENOTCONN).
        var daemonDied = false
        init(_ reason: String) { self.reason = reason }
        static let deadDaemon: Refusal = {
            var refusal = Refusal("its daemon has died")
            refusal.daemonDied = true
            return refusal
        }()
    }

    init(_ given: String) throws(Refusal) {
        guard let resolved = realpath(given, nil) else { throw Refusal("cannot resolve it: \(String(cString: strerror(errno)))") }
        path = String(cString: resolved)
        free(resolved)
        let uid = getuid()
        guard let entry = MountTable.topmost(at: path) else {
            if let enclosing = MountTable.enclosing(path), enclosing.fsType == MountEntry.dpfsType {
                throw Refusal("it is inside the dpfs mount \(enclosing.mountPoint); give that mount point")
            }
            throw Refusal("nothing is mounted there")
        }
        guard entry.fsType == MountEntry.dpfsType else { throw Refusal("it is a \(entry.fsType) mount") }
        guard entry.root == "/" else { throw Refusal("it shows a directory inside a mount, not a mount's root") }
        guard let owner = entry.fuseOwner, owner == uid else {
            throw Refusal("the kernel records uid \(entry.fuseOwner.map(String.init) ?? "unknown") as its owner, you are uid \(uid)")
        }
        socketPath = try Self.askSocketPath(of: path, device: entry.device)
        try Self.checkSocketIsOwned(socketPath, by: uid)
    }

    /// The mount root's user.dpfs.control, asked through a descriptor that is shown to
    /// be on the mount checked (a path renamed in between would land elsewhere).
    private static func askSocketPath(of path: String, device: String) throws(Refusal) -> String {
        let fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
        guard fd >= 0 else {
            throw errno == ENOTCONN ? Refusal.deadDaemon : Refusal("cannot open it: \(String(cString: strerror(errno)))")
        }
        defer { close(fd) }
        var info = stat()
        if fstat(fd, &info) != 0 && errno == ENOTCONN { throw Refusal.deadDaemon }
        guard "\(dpfs_major(info.st_dev)):\(dpfs_minor(info.st_dev))" == device else {
            throw Refusal("the mount changed while it was checked")
        }
        var buffer = [UInt8](repeating: 0, count: 4096)
        let n = fgetxattr(fd, MountAttributes.controlSocket, &buffer, buffer.count)
        if n < 0 && errno == ENOTCONN { throw Refusal.deadDaemon }
        guard n > 0 else { throw Refusal("its root names no control socket") }
        return String(decoding: buffer[0..<n], as: UTF8.self)
    }

    private static func checkSocketIsOwned(_ socketPath: String, by uid: uid_t) throws(Refusal) {
        guard socketPath.hasPrefix("/") else { throw Refusal("its control socket \(socketPath) is not an absolute path") }
        var info = stat()
        guard lstat(socketPath, &info) == 0, info.st_mode & S_IFMT == S_IFSOCK, info.st_uid == uid else {
            throw Refusal("its control socket \(socketPath) is not a socket owned by you")
        }
        let directory = (socketPath as NSString).deletingLastPathComponent
        guard lstat(directory, &info) == 0, info.st_mode & S_IFMT == S_IFDIR, info.st_uid == uid,
              info.st_mode & 0o077 == 0 else {
            throw Refusal("the directory of its control socket, \(directory), is not a directory of yours with mode 0700")
        }
    }
}
