// What `swift test` leaves running when it ends early. SwiftPM does not pass a SIGTERM
// on to the test runner it started, so a CI job's timeout that ends `dpfs test` would
// leave `dpfs run` and the test bundle running as the app, holding the mount. dpfs test
// therefore adopts its descendants (a child subreaper) and, once swift test has ended,
// ends those still running.
import CLinux
import DPFSProtocol
import Foundation
import Glibc

enum OrphanedDescendants {
    /// Makes this process the one its descendants are reparented to when their parent
    /// ends, so that they can be found and ended.
    static func adopt() {
        _ = dpfs_become_subreaper()
    }

    /// Ends every child still running and reaps it: SIGTERM first (dpfs run passes it on
    /// to its program, which can clean up), SIGKILL to whatever is left after `grace`.
    /// Children adopted meanwhile (a dpfs run's own, once it ends) are ended too.
    static func endAll(grace: Duration = .seconds(10)) {
        let clock = ContinuousClock()
        let killAt = clock.now + grace
        var terminated = Set<pid_t>()
        while true {
            reapEnded()
            let running = children()
            if running.isEmpty { return }
            let pastGrace = clock.now >= killAt
            for pid in running where pastGrace || !terminated.contains(pid) {
                kill(pid, pastGrace ? SIGKILL : SIGTERM)
                terminated.insert(pid)
            }
            usleep(20_000)
        }
    }

    private static func reapEnded() {
        var status: Int32 = 0
        while waitpid(-1, &status, WNOHANG) > 0 {}
    }

    /// This process's children: the kernel lists each thread's in /proc.
    private static func children() -> [pid_t] {
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? []
        return tasks.flatMap { task -> [pid_t] in
            guard let list = ProcFile.read("/proc/self/task/\(task)/children") else { return [] }
            return list.split(separator: " ").compactMap { pid_t($0.trimmingCharacters(in: .whitespacesAndNewlines)) }
        }
    }
}
