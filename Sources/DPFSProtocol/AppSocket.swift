// Where a program under `dpfs run` finds its device: DPFS_CONTROL_SOCKET, the app
// socket its session made, for the mount in DPFS_MOUNT. In the program's own mount
// namespace the owner's socket is hidden; this one acts only as its app.
import Foundation
import Glibc

public enum AppSocket {
    public static let environmentKey = "DPFS_CONTROL_SOCKET"
    public static let mountEnvironmentKey = "DPFS_MOUNT"

    /// The app socket for `mountpoint`, when this process was given one for that mount.
    static func given(for mountpoint: String) -> String? {
        let environment = ProcessInfo.processInfo.environment
        guard let socket = environment[environmentKey], socket.hasPrefix("/"),
              let mount = environment[mountEnvironmentKey],
              let given = resolved(mountpoint), given == resolved(mount) else { return nil }
        return socket
    }

    private static func resolved(_ path: String) -> String? {
        guard let pointer = realpath(path, nil) else { return nil }
        defer { free(pointer) }
        return String(cString: pointer)
    }
}
