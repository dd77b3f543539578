// Where the device is: `dpfs run` exports DPFS_MOUNT (the mountpoint) and DPFS_APP (the
// app's bundle ID) to the program it starts.
import DPFSProtocol
import Foundation

public enum DeviceLocation {
    public static let mountEnvironmentKey = "DPFS_MOUNT"
    public static let appEnvironmentKey = "DPFS_APP"

    /// The mountpoint from DPFS_MOUNT, or nil when it is unset or empty.
    public static var mountpoint: String? {
        guard let value = ProcessInfo.processInfo.environment[mountEnvironmentKey], !value.isEmpty else { return nil }
        return value
    }

    /// The app's bundle ID from DPFS_APP, or nil (the sandbox's own app).
    public static var app: String? {
        guard let value = ProcessInfo.processInfo.environment[appEnvironmentKey], !value.isEmpty else { return nil }
        return value
    }

    static func requireMountpoint() throws -> String {
        guard let mountpoint else { throw DeviceError.noDevice }
        return mountpoint
    }
}
