// Whether a dpfs mount has lost its daemon, asked by a command whose request failed the
// way a dying daemon makes requests fail: its control connection closed or broken
// mid-command, or a call on the mount aborted (ECONNABORTED: pending when the daemon
// died) or refused (ENOTCONN: the connection is gone). The command then says what
// `dpfs status` says, that the daemon has died, rather than the bare socket error.
import Foundation
import Glibc

public enum DaemonDeath {
    /// Whether the dpfs mount whose root is `mountRoot` (an absolute path without
    /// symlinks) has no daemon left: statfs, one request, fails with ENOTCONN. Just
    /// after the daemon's end the kernel may not yet have taken it in (the FUSE
    /// connection ends as the dead process's descriptors close, the control socket's
    /// among them): a request then aborts instead, so it asks again for up to 2 s. A
    /// mount that answers has a live daemon.
    public static func isDead(mountRoot: String) -> Bool {
        guard let entry = MountTable.topmost(at: mountRoot), entry.fsType == MountEntry.dpfsType else { return false }
        let deadline = ContinuousClock.now + .seconds(2)
        while true {
            var info = statvfs()
            if statvfs(mountRoot, &info) == 0 { return false }
            if errno == ENOTCONN { return true }
            if ContinuousClock.now >= deadline { return false }
            usleep(20_000)
        }
    }

    /// The mount point of the dead dpfs mount `path` (absolute, symlinks resolved as far
    /// as they resolve) is in, if it is in one.
    public static func deadMount(containing path: String) -> String? {
        let mounts = MountTable.entries().filter { $0.fsType == MountEntry.dpfsType }.map(\.mountPoint)
        let inside = mounts.filter { $0 == "/" || path == $0 || path.hasPrefix($0 + "/") }
        guard let mountPoint = inside.max(by: { $0.count < $1.count }), isDead(mountRoot: mountPoint) else { return nil }
        return mountPoint
    }

    /// Whether a call on a mount failed as one fails when its daemon dies.
    public static func isDeathErrno(_ code: Int32) -> Bool { code == ECONNABORTED || code == ENOTCONN }

    /// Whether a control connection failed as one fails when the daemon dies under it,
    /// or could not be made as when it died between the mount's check and the connect
    /// (its socket left with no listener).
    static func breaksConnection(_ error: any Error) -> Bool {
        switch error {
        case ControlClientError.cannotConnect(_, let code): return code == ECONNREFUSED || code == ENOENT
        case FrameError.closed: return true
        case FrameError.malformed(let why): return why == FrameError.truncatedFrame
        case FrameError.io(let code): return [EPIPE, ECONNRESET, ECONNABORTED, ENOTCONN].contains(code)
        default: return false
        }
    }
}
