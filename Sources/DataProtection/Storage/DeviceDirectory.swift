// The layout of a device directory, the "disk" of a simulated device (see dpfs(5)).
import Foundation
import Glibc

public struct DeviceDirectory: Sendable {
    public let root: String

    public init(_ path: String) {
        self.root = AbsolutePath.of(path)
    }

    public var keybagPath: String { root + "/keybag.json" }
    public var sandboxPath: String { root + "/sandbox" }
    public var itemStorePath: String { root + "/keychain.sqlite" }
    public var lockPath: String { root + "/mount.lock" }
    /// The keychain sync state (KeychainSync's SyncState).
    public var syncStatePath: String { root + "/sync.json" }
    /// Present while no POSIX ACL was ever set in the sandbox (dpfs(5)).
    public var noACLsMarkerPath: String { root + "/no-acls" }
    /// The daemon's standard error, where it logs (rotated by dpfs mount).
    public var daemonLogPath: String { root + "/daemon.log" }

    /// Marks a new device's sandbox as holding no POSIX ACL.
    public func markNoACLs() throws(SystemError) {
        let fd = open(noACLsMarkerPath, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw SystemError("open", noACLsMarkerPath) }
        close(fd)
    }

    /// The directories `init` creates inside the sandbox, parents first.
    public static let sandboxLayout = [
        "Documents", "Library", "Library/Caches", "Library/Application Support",
        "Library/Preferences", "tmp",
    ]

    public var isInitialised: Bool { FileManager.default.fileExists(atPath: keybagPath) }

    /// Takes the device's exclusive mount lock, held until the process exits.
    public func takeMountLock() throws -> Int32 {
        let fd = open(lockPath, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw SystemError("open", lockPath) }
        guard flock(fd, LOCK_EX | LOCK_NB) == 0 else {
            close(fd)
            throw DeviceError.alreadyMounted(root, mountpoint: mountpoint)
        }
        return fd
    }

    /// Where the mount table shows this device mounted (its fsname is "dpfs:ROOT"), if
    /// anywhere this process can see.
    public var mountpoint: String? {
        MountTable.entries().last { $0.fsType == MountEntry.dpfsType && $0.source == "dpfs:" + root }?.mountPoint
    }
}

public enum DeviceError: Error, CustomStringConvertible {
    case alreadyMounted(String, mountpoint: String?)
    /// Another directory of the same device (a copy: the same UUID and secret store)
    /// is mounted, or checked by fsck (DeviceUseLock).
    case copyInUse(device: String, holder: String?, mountpoint: String?)
    case notInitialised(String)
    case notEmpty(String)
    case corruptKeybag(String)
    /// The keybag's MAC does not verify with the secret its store gave: the wrong
    /// secret, or a keybag altered; which one cannot be told.
    case keybagDoesNotVerify(store: String, deviceUUID: String)
    case unsupportedFormat(String, Int)

    public var description: String {
        switch self {
        case .alreadyMounted(let path, let mountpoint?):
            return "device \(path) is already mounted on \(mountpoint) by another dpfs daemon"
        case .alreadyMounted(let path, nil): return "device \(path) is already mounted by another dpfs daemon"
        case .copyInUse(let uuid, let holder, let mountpoint):
            let user = switch (holder, mountpoint) {
            case (let holder?, let mountpoint?): "mounted from \(holder) on \(mountpoint)"
            case (let holder?, nil): "in use (mounted or checked by fsck) from \(holder)"
            case (nil, _): "in use from another copy of its directory"
            }
            return "device \(uuid) is already \(user): a copy of a device directory cannot be mounted beside it"
        case .notInitialised(let path):
            // A mistyped path is the likelier slip than a directory that never was a device.
            guard access(path, F_OK) == 0 else { return "\(path) does not exist (dpfs init makes a device there)" }
            // A device that lost its keybag: init would refuse it, and the files need it.
            let device = DeviceDirectory(path)
            if access(device.sandboxPath, F_OK) == 0 || access(device.itemStorePath, F_OK) == 0 {
                return "\(path) holds a device's files but no keybag.json: without it nothing there can be "
                    + "opened; put back the keybag.json of this device (a copy older than its record is refused), "
                    + "or restore a backup into a new directory (dpfs restore)"
            }
            return "\(path) is not a dpfs device directory (run dpfs init first)"
        case .notEmpty(let path): return "\(path) is not empty; dpfs init needs a new or empty directory"
        case .corruptKeybag(let why): return "the keybag is damaged: \(why)"
        case .keybagDoesNotVerify(let store, let uuid):
            return "the keybag's MAC does not verify with the device secret from \(store) (device \(uuid)): that secret is not this device's, or the keybag was altered"
        case .unsupportedFormat(let path, let version):
            return "\(path) is a device of on-disk format version \(version); this dpfs reads version \(KeybagFile.currentVersion) only (there is no migration: make a new device with dpfs init)"
        }
    }
}
