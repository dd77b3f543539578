// The other dpfs mounts, which dpfs run hides from the app. Whether one is alive takes
// a stat of its root, which waits for its daemon: a daemon that is stopped (a signal, a
// debugger) would hold dpfs run for as long as it stays stopped — and bwrap after it,
// which stats what it lays a directory over. So each is asked on a thread of its own,
// all within the deadline every command keeps, and one that does not answer ends the
// run with a line that names it. Exiting ends a blocked thread.
import CLinux
import DPFSProtocol
import DataProtection
import Foundation
import Glibc
import Synchronization

enum OtherDpfsMounts {
    /// The dpfs mounts other than `mount` whose daemons answer, and the directories of
    /// those daemons' control sockets. A dead mount (its daemon gone) is left out: it
    /// shows nothing, and bwrap cannot lay a directory over it.
    struct Answering {
        var mountPoints: [String] = []
        /// Where each answering daemon of this user (or root) listens: an owner's socket
        /// there takes any program of the user, an app's included, so it is hidden with
        /// the mount, wherever the daemon's environment put it.
        var socketDirectories: [String] = []
    }

    private enum Reply { case dead, alive(socketDirectory: String?) }

    static func answering(besides mount: String, within seconds: Double = DaemonDeadline.seconds) throws -> Answering {
        let entries = MountTable.entries().filter { $0.fsType == MountEntry.dpfsType && $0.mountPoint != mount }
        let points = Set(entries.map(\.mountPoint)).sorted()
        // Only a mount of this user or root is asked where its socket is: any user may
        // mount a FUSE file system of type dpfs that names any directory (with
        // allow_other, one this user's runs would see), to have them hide it.
        let trusted = Set(entries.filter { $0.fuseOwner == getuid() || $0.fuseOwner == 0 }.map(\.mountPoint))
        let answers = Mutex<[String: Reply]>([:])
        let answered = DispatchGroup()
        for point in points {
            answered.enter()
            do {
                try PosixThread.start(named: "dpfs-ask-mount") {
                    var info = stat()
                    let alive = stat(point, &info) == 0
                    let reply: Reply = alive ? .alive(socketDirectory: trusted.contains(point) ? socketDirectory(of: point) : nil) : .dead
                    answers.withLock { $0[point] = reply }
                    answered.leave()
                }
            } catch {
                // No thread to ask with: said as what it is, not as a daemon's silence.
                throw CLIError("cannot ask the dpfs mount \(point) whether it answers: \(error)")
            }
        }
        _ = answered.wait(timeout: .now() + seconds)
        let replies = answers.withLock { $0 }
        if let silent = points.first(where: { replies[$0] == nil }) {
            throw CLIError(DaemonDeadline.silence(of: silent)
                           + "; it cannot be hidden from the app until it answers, or is unmounted: then run again")
        }
        var result = Answering()
        for point in points {
            guard case .alive(let sockets)? = replies[point] else { continue }
            result.mountPoints.append(point)
            if let sockets { result.socketDirectories.append(sockets) }
        }
        return result
    }

    /// The directory of the control socket the mount at `point` names, when it is a
    /// private directory (mode 0700) of this user or of root.
    private static func socketDirectory(of point: String) -> String? {
        var buffer = [UInt8](repeating: 0, count: 4096)
        let n = getxattr(point, MountAttributes.controlSocket, &buffer, buffer.count)
        guard n > 0 else { return nil }
        let socket = String(decoding: buffer[0..<n], as: UTF8.self)
        guard socket.hasPrefix("/") else { return nil }
        let directory = (socket as NSString).deletingLastPathComponent
        var info = stat()
        guard lstat(directory, &info) == 0, info.st_mode & S_IFMT == S_IFDIR, info.st_uid == getuid() || info.st_uid == 0,
              info.st_mode & 0o077 == 0 else { return nil }
        return directory
    }
}
