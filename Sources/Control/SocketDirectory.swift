// The private directory that holds the control sockets of one user's daemons, PID.sock
// and PID.app-UUID.sock. A daemon killed outright (kill -9, a crash) leaves its sockets
// behind, and nothing else would ever remove them: each daemon that starts sweeps them.
// The sweep and a bind take the directory's lock, for pids are given again (pid_max may
// be 32768): without it a sweep that judged a dead daemon's PID.sock stale could unlink,
// by that name, the socket a new daemon with the same pid had bound meanwhile.
import DPFSProtocol
import Foundation
import Glibc

public enum SocketDirectory {
    /// Runs `body` holding the lock of `directory` (an flock on the directory itself,
    /// so no file is added to it). A directory that cannot be opened runs `body` unlocked:
    /// whatever `body` does there fails on its own.
    public static func holdingLock<T>(of directory: String, _ body: () throws -> T) rethrows -> T {
        let fd = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        defer { if fd >= 0 { close(fd) } }
        if fd >= 0 { while flock(fd, LOCK_EX) != 0 && errno == EINTR {} }
        return try body()
    }

    /// Removes the sockets in `base` of daemons that are gone: no such process, a zombie
    /// not yet reaped (whose descriptors are closed), or a process that started after
    /// the socket was made (the dead daemon's pid given again). This process's own stay.
    public static func removeStaleSockets(in base: String) {
        holdingLock(of: base) {
            guard let names = try? FileManager.default.contentsOfDirectory(atPath: base) else { return }
            let boot = bootTime()
            for name in names where name.hasSuffix(".sock") {
                guard let pid = name.split(separator: ".").first.flatMap({ pid_t($0) }), pid > 0, pid != getpid() else { continue }
                let path = base + "/" + name
                var st = stat()
                guard lstat(path, &st) == 0 else { continue }
                let gone = kill(pid, 0) != 0 && errno == ESRCH
                if gone || isDeadOrNewer(pid, than: st.st_mtim, boot: boot) { unlink(path) }
            }
        }
    }

    /// Whether process `pid` is a zombie, or started more than 2 s after `time`. Its
    /// start is counted in clock ticks from the boot, whose time (`boot`) /proc/stat
    /// gives in whole seconds (truncated, so never late); the slack covers a clock
    /// stepped since.
    private static func isDeadOrNewer(_ pid: pid_t, than time: timespec, boot: Int?) -> Bool {
        guard let status = ProcFile.read("/proc/\(pid)/stat"), let close = status.lastIndex(of: ")") else { return false }
        // "PID (COMM) STATE ...": the fields follow the command, which may hold spaces;
        // field 3 (the state) first, field 22 (the start) 20th.
        let fields = status[status.index(after: close)...].split(separator: " ")
        if fields.first?.hasPrefix("Z") == true { return true }
        let ticksPerSecond = sysconf(Int32(_SC_CLK_TCK))
        guard let boot, fields.count > 19, let ticks = Int(fields[19]), ticksPerSecond > 0 else { return false }
        return boot + ticks / ticksPerSecond > time.tv_sec + 2
    }

    /// The boot time, in seconds since the epoch (/proc/stat's btime).
    private static func bootTime() -> Int? {
        guard let text = ProcFile.read("/proc/stat") else { return nil }
        for line in text.split(separator: "\n") where line.hasPrefix("btime ") {
            return Int(line.dropFirst("btime ".count))
        }
        return nil
    }
}
