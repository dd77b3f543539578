// Where devices keep their files and secrets at rest, as far as this machine tells,
// which dpfs run hides from the app: hiding another device's mount alone leaves its
// `none` files and `Always` items to whoever reads its directory and its secret, and
// with both an app could mount that device itself. dpfs keeps no list of devices, so
// this is what can be found: the device directory of every dpfs mount of this user
// or root in the mount table (its fsname, "dpfs:DEVICE"), the `file` store its keybag
// names, and the default file stores, where every device made without
// --secret-store file:DIR keeps its secret whether it is mounted or not.
import DataProtection
import DPFSProtocol
import Foundation
import Glibc

enum DevicesAtRest {
    static let fsnamePrefix = "dpfs:"
    /// Root's default file store (dpfs(1), FILES).
    static let rootDefaultStore = "/var/lib/dpfs"

    /// The directories above, existing or not, with symbolic links resolved.
    static func directories() -> [String] {
        var paths: [String] = []
        for entry in MountTable.entries() where entry.fsType == MountEntry.dpfsType && entry.source.hasPrefix(fsnamePrefix)
            && trusted(entry) {
            let device = DeviceDirectory(String(entry.source.dropFirst(fsnamePrefix.count)))
            paths.append(device.root)
            // A keybag this user cannot read names a store this user cannot read either.
            if case .file(let store)? = try? KeybagFile.storeEntry(of: device).store { paths.append(store) }
        }
        paths += defaultStores()
        return paths.map(AbsolutePath.of)
    }

    /// Any user may mount a FUSE file system of type dpfs with the fsname it likes, and
    /// name any store in a keybag of its own: trusted, it could have this user's runs
    /// hide /usr. Another user's device, as its store, is that user's alone to read.
    private static func trusted(_ entry: MountEntry) -> Bool {
        entry.fuseOwner == getuid() || entry.fuseOwner == 0
    }

    /// Root's, and this user's as its environment and its passwd entry place it: a
    /// device made under another HOME or XDG_STATE_HOME, or by `sudo`, keeps its
    /// secret in one of these.
    static func defaultStores() -> [String] {
        var stores = [rootDefaultStore]
        if case .file(let store)? = try? SecretStoreLocation(parsing: "file") { stores.append(store) }
        let environment = ProcessInfo.processInfo.environment
        if let state = environment["XDG_STATE_HOME"], state.hasPrefix("/") { stores.append(state + "/dpfs") }
        var homes = [environment["HOME"]]
        if let entry = getpwuid(getuid()), let home = entry.pointee.pw_dir { homes.append(String(cString: home)) }
        for case let home? in homes where home.hasPrefix("/") { stores.append(home + "/.local/state/dpfs") }
        return stores
    }
}
