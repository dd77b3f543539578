// Paths a command writes to that must stay clear of the device directory and of a
// `file` secret store's directory. A mount point inside or around either: a program
// under `dpfs run` must see the mount but not those (AppView), and the daemon reaches
// them by their paths, which a mount over them covers (its first keybag save would
// fail). A salvage directory inside either would put the device's files there in
// plaintext, beside the keys that seal them.
import DataProtection

enum DeviceNesting {
    /// Throws when `path` (called `what` in the message) is inside or around the
    /// device directory or its `file` secret store's directory. Paths are compared
    /// with symbolic links and ".." resolved, so that no other spelling of them gets by.
    static func refuse(_ what: String, _ path: String, of directory: DeviceDirectory, else advice: String) throws {
        let target = AbsolutePath.of(path)
        var kept = [(AbsolutePath.of(directory.root), "the device directory")]
        if case .file(let store)? = try? KeybagFile.storeEntry(of: directory).store {
            kept.append((AbsolutePath.of(store), "the secret store's directory"))
        }
        for (keptPath, name) in kept {
            if isPath(target, within: keptPath) {
                throw CLIError("\(what) \(path) is inside \(name) \(keptPath); \(advice)")
            }
            if isPath(keptPath, within: target) {
                throw CLIError("\(what) \(path) holds \(name) \(keptPath); \(advice)")
            }
        }
    }
}
