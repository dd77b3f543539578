// A daemon's sweep removes the sockets of daemons that are gone and keeps the live
// ones, and never removes one that a daemon with a dead one's pid binds meanwhile.
@testable import Control
import DPFSProtocol
import Foundation
import Glibc
import Testing

@Suite struct SocketDirectoryTests {
    /// Short names throughout: a socket's whole path must fit sun_path (108 bytes), and
    /// the suite's TMPDIR is long.
    private static func makeDirectory() throws -> String {
        let directory = NSTemporaryDirectory() + "sk-\(UInt32.random(in: 0...UInt32.max))"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: false)
        return directory
    }

    /// A socket bound at `path` (and closed: only its name is left, as a killed daemon's).
    private static func bindSocket(at path: String) throws {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        try #require(fd >= 0)
        defer { close(fd) }
        var address = try #require(UnixAddress(path: path))
        try #require(address.withSockaddr { bind(fd, $0, $1) } == 0)
    }

    /// Sets the time the socket at `path` was made to long before this boot.
    private static func makeOld(_ path: String) throws {
        var times = [timespec(tv_sec: 1_000_000, tv_nsec: 0), timespec(tv_sec: 1_000_000, tv_nsec: 0)]
        try #require(utimensat(AT_FDCWD, path, &times, AT_SYMLINK_NOFOLLOW) == 0)
    }

    private static func exists(_ path: String) -> Bool {
        var st = stat()
        return lstat(path, &st) == 0
    }

    /// A pid no process has now.
    private static func unusedPID() throws -> pid_t {
        let pid = try #require((100_000...4_000_000).lazy.map { pid_t($0) }.first { kill($0, 0) != 0 && errno == ESRCH })
        return pid
    }

    @Test func theSocketsOfGoneDaemonsGoAndTheLiveOnesStay() throws {
        let directory = try Self.makeDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let gone = try Self.unusedPID()
        let paths = (goneOwner: "\(directory)/\(gone).sock",
                     goneApp: "\(directory)/\(gone).app-a.sock",
                     // PID 1 started at the boot: before a socket made now, after an old one.
                     live: "\(directory)/1.sock",
                     pidGivenAgain: "\(directory)/1.app-b.sock",
                     own: "\(directory)/\(getpid()).sock",
                     other: "\(directory)/notes.txt")
        for path in [paths.goneOwner, paths.goneApp, paths.live, paths.pidGivenAgain, paths.own] {
            try Self.bindSocket(at: path)
        }
        try Self.makeOld(paths.pidGivenAgain)
        try Self.makeOld(paths.own)
        try Data().write(to: URL(fileURLWithPath: paths.other))
        SocketDirectory.removeStaleSockets(in: directory)
        #expect(!Self.exists(paths.goneOwner), "no process has the pid")
        #expect(!Self.exists(paths.goneApp), "no process has the pid")
        #expect(Self.exists(paths.live), "made after its process started")
        #expect(!Self.exists(paths.pidGivenAgain), "made before its process started")
        #expect(Self.exists(paths.own), "this process's own")
        #expect(Self.exists(paths.other), "not a socket's name")
    }

    /// Whether /proc/locks shows a process waiting for an flock on the inode `inode`.
    private static func someoneWaits(on inode: ino_t) -> Bool {
        guard let locks = ProcFile.read("/proc/locks") else { return false }
        return locks.split(separator: "\n").contains { $0.contains("-> FLOCK") && $0.contains(":\(inode) ") }
    }

    /// The race a sweep lost when pids wrap: it judged the dead daemon's PID.sock stale,
    /// a new daemon with that pid bound its own there, and the sweep unlinked that by
    /// the name. A bind holds the directory's lock (here the test holds it as the new
    /// daemon's bind does): the sweep waits for it, then sees the new socket and keeps it.
    @Test func aSweepKeepsTheSocketADaemonWithTheSamePidBindsMeanwhile() throws {
        let directory = try Self.makeDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        var st = stat()
        try #require(lstat(directory, &st) == 0)
        let path = "\(directory)/1.sock"
        try Self.bindSocket(at: path)
        try Self.makeOld(path)
        let swept = DispatchSemaphore(value: 0)
        let newSocket: ino_t = try SocketDirectory.holdingLock(of: directory) {
            Thread.detachNewThread {
                SocketDirectory.removeStaleSockets(in: directory)
                swept.signal()
            }
            let deadline = ContinuousClock.now + .seconds(60)
            while !Self.someoneWaits(on: st.st_ino) && ContinuousClock.now < deadline { usleep(10_000) }
            #expect(Self.someoneWaits(on: st.st_ino), "the sweep waits for the bind")
            // The new daemon's bind: the old name goes, its own takes its place.
            unlink(path)
            try Self.bindSocket(at: path)
            var bound = stat()
            try #require(lstat(path, &bound) == 0)
            return bound.st_ino
        }
        #expect(swept.wait(timeout: .now() + 60) == .success, "the sweep ends once the bind is done")
        var after = stat()
        #expect(lstat(path, &after) == 0, "the new daemon's socket is still there")
        #expect(after.st_ino == newSocket)
    }
}
