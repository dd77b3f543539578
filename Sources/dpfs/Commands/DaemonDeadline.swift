// Every command must come back even when the daemon cannot answer: one stopped by a
// signal or a debugger blocks every touch of its mount for as long as it stays
// stopped. The connection gives up after a deadline (ControlClient bounds the mount's
// check), and lock, restart and status run their request on a thread of its own with
// the same deadline; the command then names the daemon's state when it can read it,
// and for lock and restart whether the request had gone out: one given up on before
// (the usual case, blocked on the mount) did nothing, and must be made again. Exiting
// ends a blocked thread: a fatal signal interrupts a FUSE request's wait.
import CLinux
import DataProtection
import DPFSProtocol
import Foundation
import Synchronization

enum DaemonDeadline {
    static let seconds = 15.0

    /// The daemon's reply to `request`, or a CLIError once `seconds` pass without one.
    /// With no thread to spare, the request runs on the caller's, as in `within`.
    static func send(_ request: ControlRequest, to mountpoint: String) throws -> ControlReply {
        let sent = Atomic<Bool>(false)
        let outcome = within { () -> Result<ControlReply, any Error> in
            Result {
                let client = try ControlClient(mountpoint: mountpoint, timeout: seconds)
                sent.store(true, ordering: .releasing)
                return try client.send(request)
            }
        }
        guard let result = outcome else {
            throw CLIError(silence(of: mountpoint) + consequence(of: request, sent: sent.load(ordering: .acquiring)))
        }
        // The connection's own deadline, which ends with this one: the same silence.
        if case .failure(ControlClientError.noAnswer) = result {
            throw CLIError(silence(of: mountpoint) + consequence(of: request, sent: false))
        }
        return try result.get()
    }

    /// A connection to the daemon of `mountpoint`, or a CLIError once `seconds` pass
    /// without one (ControlClient bounds the mount's check too). Its requests then wait
    /// as long as they take.
    static func client(for mountpoint: String) throws -> ControlClient {
        do {
            return try ControlClient(mountpoint: mountpoint, timeout: seconds)
        } catch ControlClientError.noAnswer {
            throw CLIError(silence(of: mountpoint))
        }
    }

    /// `body`'s result, or nil once `seconds` pass without one: for a touch of the
    /// mount itself (its statfs), which no socket timeout bounds. The thread left
    /// waiting ends when the daemon answers or with the process. With no thread to
    /// spare, `body` runs on the caller's, unbounded.
    static func within<T: Sendable>(_ body: @escaping @Sendable () -> T) -> T? {
        let outcome = Mutex<T?>(nil)
        let done = DispatchSemaphore(value: 0)
        let started = try? PosixThread.start(named: "dpfs-mount-ask") {
            let result = body()
            outcome.withLock { $0 = result }
            done.signal()
        }
        guard started != nil else { return body() }
        guard done.wait(timeout: .now() + seconds) == .success else { return nil }
        return outcome.withLock { $0 }
    }

    /// That the daemon of `mountpoint` did not answer in time, and its process's state
    /// (with the way to resume it when it is stopped) where that can be read.
    static func silence(of mountpoint: String) -> String {
        let waited = "the dpfs daemon of \(mountpoint) did not answer within \(Int(seconds)) s"
        guard let (pid, state) = DaemonProcess.find(mountpoint: lexicalPath(mountpoint)) else { return waited }
        switch state {
        case "T", "t":
            return waited + ": its process (pid \(pid)) is stopped, by a signal or a debugger; `kill -CONT \(pid)` resumes it"
        default:
            return waited + " (its process, pid \(pid), is in state \(state))"
        }
    }

    /// What became of a lock or restart given up on: never sent, it did not happen.
    private static func consequence(of request: ControlRequest, sent: Bool) -> String {
        let undone: String
        switch request {
        case .lock: undone = "locked"
        case .restart: undone = "restarted"
        default: return ""
        }
        return sent ? "; the request was sent: the daemon carries it out if it resumes"
                    : "; the device was not \(undone): run the command again once the daemon answers"
    }
}

/// `path` made absolute, with "." and ".." taken out by their spelling alone: the
/// usual ways (realpath, Foundation's standardizingPath) stat the path, which on the
/// stopped mount blocks as the request did.
private func lexicalPath(_ path: String) -> String {
    let absolute = path.hasPrefix("/") ? path : FileManager.default.currentDirectoryPath + "/" + path
    var parts: [Substring] = []
    for part in absolute.split(separator: "/") where part != "." {
        if part == ".." { _ = parts.popLast() } else { parts.append(part) }
    }
    return "/" + parts.joined(separator: "/")
}

/// The daemon serving a mountpoint: the process holding its device's mount lock, as
/// /proc/locks lists it. Nothing here reads another process's memory (its command
/// line would): a process blocked on the stopped mount could hold that up too.
enum DaemonProcess {
    /// Its pid and /proc state letter (R, S, D, T…), or nil when it cannot be told.
    static func find(mountpoint: String) -> (pid: Int32, state: String)? {
        guard let entry = MountTable.topmost(at: mountpoint), entry.source.hasPrefix("dpfs:"),
              let pid = lockHolder(of: DeviceDirectory(String(entry.source.dropFirst(5))).lockPath),
              let state = state(of: pid) else { return nil }
        return (pid, state)
    }

    /// The pid of the flock on `path`: /proc/locks names it by MAJ:MIN:INODE, in hex.
    private static func lockHolder(of path: String) -> Int32? {
        var info = stat()
        // Read whole: newer locks come first, and a machine with many devices mounted
        // lists more than one read returns.
        guard stat(path, &info) == 0, let locks = ProcFile.read("/proc/locks") else { return nil }
        let file = String(format: "%02x:%02x:%lu", dpfs_major(info.st_dev), dpfs_minor(info.st_dev), UInt(info.st_ino))
        for line in locks.split(separator: "\n") {
            let fields = line.split(separator: " ")
            if fields.count > 5, fields[1] == "FLOCK", fields[5] == file { return Int32(fields[4]) }
        }
        return nil
    }

    /// The state letter after the command name in /proc/PID/stat.
    private static func state(of pid: Int32) -> String? {
        guard let stat = FileManager.default.contents(atPath: "/proc/\(pid)/stat"),
              let text = String(data: stat, encoding: .utf8), let close = text.range(of: ") ", options: .backwards) else {
            return nil
        }
        return text[close.upperBound...].first.map(String.init)
    }
}
