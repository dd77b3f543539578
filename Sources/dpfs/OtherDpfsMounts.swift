// The other dpfs mounts, which dpfs run hides from the app. Whether one is alive takes
// a stat of its root, which waits for its daemon: a daemon that is stopped (a signal, a
// debugger) would hold dpfs run for as long as it stays stopped — and bwrap after it,
// which stats what it lays a directory over. So each is asked on a thread of its own,
// all within the deadline every command keeps, and one that does not answer ends the
// run with a line that names it. Exiting ends a blocked thread.
import DataProtection
import Foundation
import Glibc
import Synchronization

enum OtherDpfsMounts {
    /// The mount points of the dpfs mounts other than `mount` whose daemons answer. A dead
    /// one (its daemon gone) is left out: it shows nothing, and bwrap cannot lay a
    /// directory over it.
    static func answering(besides mount: String, within seconds: Double = DaemonDeadline.seconds) throws -> [String] {
        let points = Set(MountTable.entries().filter { $0.fsType == MountEntry.dpfsType }.map(\.mountPoint))
            .subtracting([mount]).sorted()
        let alive = Mutex<[String: Bool]>([:])
        let answered = DispatchGroup()
        for point in points {
            answered.enter()
            Thread {
                var info = stat()
                let answer = stat(point, &info) == 0
                alive.withLock { $0[point] = answer }
                answered.leave()
            }.start()
        }
        _ = answered.wait(timeout: .now() + seconds)
        let answers = alive.withLock { $0 }
        if let silent = points.first(where: { answers[$0] == nil }) {
            throw CLIError(DaemonDeadline.silence(of: silent)
                           + "; it cannot be hidden from the app until it answers, or is unmounted: then run again")
        }
        return points.filter { answers[$0] == true }
    }
}
