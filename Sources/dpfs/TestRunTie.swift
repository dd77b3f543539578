// The tie of a `dpfs run` that `dpfs test` started to that dpfs test. SwiftPM starts its
// test runner in a process group of its own, which a CI job's SIGKILL to dpfs test's
// group does not reach: without the tie the run, and its program as the app, would stay,
// holding the mount. dpfs test names itself in the runner's arguments (`--ends-with`);
// when it ends, the run kills its program with SIGKILL — dpfs test only ends before its
// runs when it was killed outright, and its SIGTERM and grace period are then over.
import CLinux
import DPFSProtocol
import Foundation
import Glibc

/// One process, named by its pid and its start (in clock ticks since the boot), which
/// together still name it after its pid was given to another process.
struct ProcessIdentity: Equatable {
    let pid: pid_t
    let startTicks: UInt64

    /// "PID:TICKS", as `argument` writes it.
    init?(argument: String) {
        let parts = argument.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 2, let pid = pid_t(parts[0]), pid > 0, let ticks = UInt64(parts[1]) else { return nil }
        self.pid = pid
        self.startTicks = ticks
    }

    private init(pid: pid_t, startTicks: UInt64) {
        self.pid = pid
        self.startTicks = startTicks
    }

    var argument: String { "\(pid):\(startTicks)" }

    /// The process that has `pid` now, if any.
    static func of(_ pid: pid_t) -> ProcessIdentity? {
        // "PID (COMM) STATE …": the command may hold spaces and parentheses; the start is
        // field 22, the 20th after the command.
        guard let stat = ProcFile.read("/proc/\(pid)/stat"), let close = stat.lastIndex(of: ")") else { return nil }
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        guard fields.count > 19, let ticks = UInt64(fields[19]) else { return nil }
        return ProcessIdentity(pid: pid, startTicks: ticks)
    }
}

struct TestRunTie {
    /// Readable once the dpfs test has ended.
    private let pidfd: Int32

    /// The tie to `test`; throws when it has ended already (the run then starts nothing).
    /// Nil, with a warning, where the kernel (before 5.3) or a container's seccomp
    /// profile offers no pidfd: the run goes on untied, as a run started by hand is.
    static func open(_ test: ProcessIdentity) throws -> TestRunTie? {
        let pidfd = dpfs_pidfd_open(test.pid)
        guard pidfd >= 0 else {
            let failure = errno
            if failure == ESRCH { throw ended }
            if failure == ENOSYS || failure == EPERM {
                FileHandle.standardError.write(Data(("warning: cannot watch dpfs test (pid \(test.pid)): "
                    + "\(String(cString: strerror(failure))); this run is not tied to it, and a SIGKILL "
                    + "of dpfs test can leave it running\n").utf8))
                return nil
            }
            throw CLIError("cannot watch dpfs test (pid \(test.pid)): \(String(cString: strerror(failure)))")
        }
        // Checked once the descriptor holds the process: a pid given to another since
        // shows another start.
        guard ProcessIdentity.of(test.pid) == test else {
            close(pidfd)
            throw ended
        }
        return TestRunTie(pidfd: pidfd)
    }

    private static let ended = CLIError("the dpfs test that started this run has ended")

    /// Whether the dpfs test has ended.
    var hasEnded: Bool {
        var entry = pollfd(fd: pidfd, events: Int16(POLLIN), revents: 0)
        return poll(&entry, 1, 0) > 0
    }

    /// Kills `child` (a child of this process not reaped yet) with SIGKILL when the dpfs
    /// test ends, from a thread of its own. The signal goes through a pidfd, so once
    /// `child` is reaped it can reach no other process. A watch that cannot start kills
    /// `child` at once: a program that could outlive its dpfs test must not run.
    func killOnEnd(_ child: pid_t) {
        let target = dpfs_pidfd_open(child)
        let watched = pidfd
        let started = target >= 0 && (try? PosixThread.start(named: "dpfs-test-tie") {
            var entry = pollfd(fd: watched, events: Int16(POLLIN), revents: 0)
            while poll(&entry, 1, -1) < 0 && errno == EINTR {}
            _ = dpfs_pidfd_send_signal(target, SIGKILL)
        }) != nil
        guard started else {
            FileHandle.standardError.write(Data("Error: cannot watch the dpfs test that started this run\n".utf8))
            if target >= 0 { close(target) }
            kill(child, SIGKILL)
            return
        }
    }
}
