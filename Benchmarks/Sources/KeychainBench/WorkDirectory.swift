// The bench's work directory in the temporary directory (its devices, their secrets,
// the mount point), locked for as long as the bench runs. A bench killed outright
// (kill -9) removes nothing itself; its daemon stops on its own (dpfs mount
// --end-with), and the next bench removes the directory it left: one whose lock no
// process holds and whose mount point is no longer a mount.
import Foundation
import Glibc

enum WorkDirectory {
    static let prefix = "dpfs-keychain-bench-"

    /// A new work directory, its lock held until this process ends. It is made under a
    /// name the sweep passes over and renamed once locked, so that no other bench takes
    /// it for abandoned between the two.
    static func make() -> URL {
        let temporary = FileManager.default.temporaryDirectory
        let name = prefix + UUID().uuidString
        let making = temporary.appendingPathComponent(name + ".new")
        let work = temporary.appendingPathComponent(name)
        guard mkdir(making.path, 0o700) == 0 else { refuse("cannot make \(making.path)", errno) }
        // Never closed: the lock goes with the process, however it ends.
        let lock = open(making.appendingPathComponent("lock").path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard lock >= 0, flock(lock, LOCK_EX) == 0, rename(making.path, work.path) == 0 else {
            let error = errno
            try? FileManager.default.removeItem(at: making)
            refuse("cannot lock \(making.path)", error)
        }
        return work
    }

    /// Removes the work directories of benches that were killed. One without a lock
    /// file (being made, or an older bench's) is left alone, and so is one whose mount
    /// point is still a mount: its daemon is still stopping, or died and left it.
    static func removeAbandoned() {
        let temporary = FileManager.default.temporaryDirectory
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: temporary.path) else { return }
        for name in names where name.hasPrefix(prefix) && !name.contains(".") {
            let directory = temporary.appendingPathComponent(name)
            let lock = open(directory.appendingPathComponent("lock").path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)
            guard lock >= 0 else { continue }
            defer { close(lock) }
            guard flock(lock, LOCK_EX | LOCK_NB) == 0 else { continue }
            guard !isMounted(directory.appendingPathComponent("mnt").path, within: directory.path) else { continue }
            try? FileManager.default.removeItem(at: directory)
        }
    }

    /// Whether `mountpoint` is on another filesystem than `parent`, or cannot be
    /// looked at (a mount whose daemon died answers ENOTCONN): never removed through.
    private static func isMounted(_ mountpoint: String, within parent: String) -> Bool {
        var outer = stat(), inner = stat()
        guard stat(parent, &outer) == 0 else { return true }
        guard stat(mountpoint, &inner) == 0 else { return errno != ENOENT }
        return inner.st_dev != outer.st_dev
    }

    private static func refuse(_ message: String, _ error: Int32) -> Never {
        FileHandle.standardError.write(Data("KeychainBench: \(message): \(String(cString: strerror(error)))\n".utf8))
        exit(1)
    }
}
