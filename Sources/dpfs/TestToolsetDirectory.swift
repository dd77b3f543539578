// The private directory that holds `swift test`'s toolset for the length of one run.
// A run killed outright (SIGKILL, a CI runner's cleanup) cannot remove its own, so
// each run removes those of the caller's runs that ended: the directory's name carries
// the pid of the run that made it, and a file in it stays flocked while that run lives.
// The lock answers whether it ended even when its pid has been given to another process
// since; the pid answers for the moment before the lock is in place.
import Foundation
import Glibc

struct TestToolsetDirectory {
    static let prefix = "dpfs-test-"
    static let lockName = "lock"

    let path: String
    /// Flocked for the life of the run; closing it (as the process's end does) frees it.
    private let lock: Int32

    /// A new 0700 directory in `base`, locked as this run's, once the leftovers of
    /// ended runs there are removed.
    static func make(in base: String) throws -> TestToolsetDirectory {
        removeLeftovers(in: base)
        var template = Array((base + "/" + prefix + "\(getpid()).XXXXXX").utf8CString)
        guard let made = mkdtemp(&template) else {
            throw CLIError("cannot make a temporary directory in \(base): \(String(cString: strerror(errno)))")
        }
        let path = String(cString: made)
        // Locked under another name, then named: a "lock" file is always held by its run
        // or by none, never found unlocked in the instant after it was made.
        let fd = open(path + "/" + lockName + ".new", O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard fd >= 0, flock(fd, LOCK_EX) == 0, rename(path + "/" + lockName + ".new", path + "/" + lockName) == 0 else {
            let reason = String(cString: strerror(errno))
            if fd >= 0 { close(fd) }
            try? FileManager.default.removeItem(atPath: path)
            throw CLIError("cannot lock the temporary directory \(path): \(reason)")
        }
        return TestToolsetDirectory(path: path, lock: fd)
    }

    /// Removes the directory, then frees its lock.
    func remove() {
        try? FileManager.default.removeItem(atPath: path)
        close(lock)
    }

    /// Removes the directories in `base` that runs of this user made and that ended.
    static func removeLeftovers(in base: String) {
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: base) else { return }
        for name in names {
            guard let pid = maker(of: name) else { continue }
            let directory = base + "/" + name
            var info = stat()
            guard lstat(directory, &info) == 0, info.st_mode & S_IFMT == S_IFDIR, info.st_uid == geteuid() else { continue }
            removeIfEnded(directory, madeBy: pid)
        }
    }

    /// The pid in `name` if it is exactly "dpfs-test-PID.XXXXXX" as mkdtemp makes it.
    static func maker(of name: String) -> pid_t? {
        guard name.hasPrefix(prefix) else { return nil }
        let parts = name.dropFirst(prefix.count).split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 2, let pid = pid_t(parts[0]), pid > 0, String(pid) == parts[0], parts[1].count == 6,
              parts[1].allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber) }) else { return nil }
        return pid
    }

    /// Removes `directory` when its run ended: its lock can be taken, or, before the
    /// lock was in place, its pid names no process.
    private static func removeIfEnded(_ directory: String, madeBy pid: pid_t) {
        let fd = open(directory + "/" + lockName, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)
        if fd >= 0 {
            defer { close(fd) }
            // Held meanwhile: a run that still lives never sees its directory go.
            guard flock(fd, LOCK_EX | LOCK_NB) == 0 else { return }
            try? FileManager.default.removeItem(atPath: directory)
            return
        }
        guard errno == ENOENT, kill(pid, 0) != 0, errno == ESRCH else { return }
        try? FileManager.default.removeItem(atPath: directory)
    }
}
