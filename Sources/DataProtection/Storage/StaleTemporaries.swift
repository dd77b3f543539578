// The temporaries that writes a kill cut short left behind. AtomicFile writes
// "<target>.tmp-<pid>" and renames it over its target: a kill between the two leaves
// the temporary, which nothing else removes, so a daemon killed again and again
// leaves one per pid it ran as. When the device is opened (mount, fsck) those of its
// files go: a temporary of a process that no longer runs (or is not ours to signal),
// and one made before the open, whose pid the system may have given another process
// since. A temporary a live process of ours made since the open is a write under way.
import Foundation
import Glibc

extension AtomicFile {
    static let temporaryInfix = ".tmp-"

    /// The temporary through which process `pid` writes `path`.
    static func temporaryPath(of path: String, pid: pid_t = getpid()) -> String {
        path + temporaryInfix + String(pid)
    }

    /// Removes the stale temporaries of `path` (above), the device having been opened
    /// at `openedAt` (CLOCK_REALTIME_COARSE, the clock of file times); returns their names.
    @discardableResult
    public static func removeStaleTemporaries(of path: String, openedAt: timespec) -> [String] {
        let directory = (path as NSString).deletingLastPathComponent
        let prefix = (path as NSString).lastPathComponent + temporaryInfix
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: directory) else { return [] }
        var removed: [String] = []
        for name in names where name.hasPrefix(prefix) {
            let digits = name.utf8.dropFirst(prefix.utf8.count)
            guard !digits.isEmpty, digits.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }),
                  let pid = pid_t(String(decoding: digits, as: UTF8.self)), pid > 0 else { continue }
            let temporary = directory + "/" + name
            var info = stat()
            // A regular file only: anything else under that name is not one of ours.
            guard lstat(temporary, &info) == 0, info.st_mode & S_IFMT == S_IFREG else { continue }
            let running = kill(pid, 0) == 0
            let madeBefore = (info.st_mtim.tv_sec, info.st_mtim.tv_nsec) < (openedAt.tv_sec, openedAt.tv_nsec)
            guard !running || madeBefore else { continue }
            if unlink(temporary) == 0 { removed.append(name) }
        }
        return removed
    }

    /// Now, on the clock of file times (the kernel stamps them from the coarse clock).
    public static func fileClockNow() -> timespec {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME_COARSE, &now)
        return now
    }
}

extension DeviceDirectory {
    /// Removes the stale temporaries of the device's files in this directory (its
    /// keybag, the simulated user's enrollment, the sync state); returns their names.
    /// The caller holds the mount lock, which every writer of them holds.
    @discardableResult
    public func removeStaleTemporaries(openedAt: timespec) -> [String] {
        [keybagPath, BiometryRecord.path(in: self), syncStatePath].flatMap {
            AtomicFile.removeStaleTemporaries(of: $0, openedAt: openedAt)
        }
    }
}
