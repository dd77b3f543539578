// Records a daemon's death and leaves its mount failing closed. When a daemon dies
// without unmounting (SIGKILL, a crash, the out-of-memory killer, a connection aborted
// through /sys/fs/fuse), the kernel keeps its mount and answers every request on it
// with ENOTCONN: nothing more comes from the device (what the kernel had cached stays
// readable through what was open: docs/security.md), and nothing can be created or
// written in the clear in the directory beneath, as it could if the mount were taken
// away (a shell whose cwd is inside, a program that writes by path). The dead mount
// stays until `dpfs unmount` or the next `dpfs mount` on it takes it down (DeadMount).
//
// The watch is a process of its own, `dpfs unmount MOUNTPOINT --when-closed 3 --source
// dpfs:DEVICE`, started just before the mount is made, waiting on the read end of a
// pipe whose write end only the daemon holds. Once mounted, the daemon tells it which
// mount is its own: the connection (device number) and, from Linux 6.8, the mount id
// (one the kernel never gives twice). A daemon whose mount is gone writes one byte more
// before it ends, and the watch just ends. If the pipe closes without that byte, the
// daemon died with its mount in place: the watch writes so to the device's log (its
// standard error), the one record of a death nobody saw.
import CFuse
import FuseLoop
import CLinux
import DataProtection
import Foundation
import Glibc

public enum DaemonWatch {
    struct StartError: Error, CustomStringConvertible {
        let why: String
        var description: String { "cannot start the process that watches for the daemon's death: \(why)" }
    }

    /// Which mount a mount point shows: its device ("major:minor") and, where the kernel
    /// has them, its never reused mount id.
    public struct Identity: Equatable, Sendable {
        public let device: String
        public let mountID: UInt64?

        public init(device: String, mountID: UInt64?) {
            self.device = device
            self.mountID = mountID
        }

        /// The mount's id at `path` (which must show it now) joined to `device`.
        /// Asks nothing of the mount's daemon.
        public init(device: String, at path: String) {
            var id: UInt64 = 0
            self.device = device
            mountID = dpfs_mount_id(path, &id) == 1 ? id : nil
        }

        /// Whether `path` (absolute, without symlinks) still shows this mount; false
        /// also where that cannot be told.
        public func isShown(at path: String) -> Bool {
            shown(at: path) ?? false
        }

        /// Whether `path` (absolute, without symlinks) still shows this mount, or nil
        /// when that cannot be told now (the mount table or the mount's id could not be
        /// read, for want of a descriptor or of memory).
        public func shown(at path: String) -> Bool? {
            guard let table = MountTable.read() else { return nil }
            guard let shown = table.last(where: { $0.mountPoint == path }), shown.device == device,
                  shown.fsType == MountEntry.dpfsType else { return false }
            guard let mountID else { return true }
            var id: UInt64 = 0
            switch dpfs_mount_id(path, &id) {
            case 1: return id == mountID
            case 0: return false
            default: return nil
            }
        }
    }

    /// Starts the watch of the mount about to be made at `mountpoint` (absolute, without
    /// symlinks) from `source` (the mount's fsname). Returns the pipe's write end,
    /// close-on-exec, to be held open as long as the daemon lives: its closing is the
    /// signal. Tell the watch the mount with `announce` once it is made.
    static func start(mountpoint: String, source: String) throws -> Int32 {
        var ends: [Int32] = [0, 0]
        // Close-on-exec from the start: a process another thread spawns must not hold it.
        guard pipe2(&ends, O_CLOEXEC) == 0 else { throw StartError(why: String(cString: strerror(errno))) }
        let (readEnd, writeEnd) = (ends[0], ends[1])
        defer { close(readEnd) }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        // Its own stdin, the daemon's stdout and stderr (the device's log), the pipe as
        // descriptor 3, and nothing else: above all not /dev/fuse, which would keep the
        // connection.
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_adddup2(&actions, readEnd, 3)
        posix_spawn_file_actions_addclosefrom_np(&actions, 4)
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        // A session of its own (a signal to the daemon's group does not reach it), and
        // no signal blocked whatever the spawning thread blocks.
        var none = sigset_t()
        sigemptyset(&none)
        posix_spawnattr_setsigmask(&attributes, &none)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK) | newSessionFlag)
        let arguments = ["dpfs", "unmount", mountpoint, "--when-closed", "3", "--source", source]
        var argv: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) }
        argv.append(nil)
        defer { for argument in argv { free(argument) } }
        var pid: pid_t = 0
        let rc = posix_spawn(&pid, "/proc/self/exe", &actions, &attributes, argv, environ)
        guard rc == 0 else {
            close(writeEnd)
            throw StartError(why: String(cString: strerror(rc)))
        }
        // Not waited for: it outlives the daemon, and then init reaps it.
        return writeEnd
    }

    /// Tells the watch of `pipe` which mount is the daemon's: "m DEVICE ID\n", ID "-"
    /// where the kernel has no unique mount ids. One write, shorter than PIPE_BUF: the
    /// watch reads all of it or none.
    static func announce(_ pipe: Int32, mount: Identity) {
        let line = "\(announcedPrefix)\(mount.device) \(mount.mountID.map(String.init) ?? "-")\n"
        signal(SIGPIPE, SIG_IGN)
        _ = line.utf8CString.withUnsafeBufferPointer { write(pipe, $0.baseAddress, $0.count - 1) }
    }

    /// Lets the watch of `pipe` (start's result) end: with the byte that says the mount
    /// is gone if `unmounted`, else by closing the pipe only (the watch then records
    /// the dead mount left behind).
    static func dismiss(_ pipe: Int32, unmounted: Bool) {
        if unmounted {
            // A watch already gone (killed) must not take the daemon with it.
            signal(SIGPIPE, SIG_IGN)
            var byte = unmountedByte
            _ = write(pipe, &byte, 1)
        }
        close(pipe)
    }

    /// How the daemon ended, as its watch saw it.
    public enum DaemonEnd: Equatable {
        /// It said its mount was gone.
        case unmounted
        /// Its process ended without saying so (or the pipe failed), having announced
        /// this mount, or none.
        case vanished(Identity?)
    }

    /// In the watch: waits on `pipe` until the daemon ends.
    public static func awaitDaemonEnd(_ pipe: Int32) -> DaemonEnd {
        // What starting the runtime touched of the program and its libraries is not
        // needed while it waits: 18 of its 24 MiB resident (shared with the daemon).
        dpfs_release_code_pages()
        var said: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 128)
        while said.count < 1024 {
            let n = read(pipe, &chunk, chunk.count)
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { break }
            said += chunk[0..<n]
            if messages(in: said).unmounted { return .unmounted }
        }
        return .vanished(messages(in: said).announced)
    }

    /// What the daemon said: the mount its "m DEVICE ID\n" line named, and whether the
    /// byte that says it is gone came after it (or alone, from a daemon that mounted nothing).
    static func messages(in said: [UInt8]) -> (announced: Identity?, unmounted: Bool) {
        var rest = said[...]
        var announced: Identity?
        if rest.first == UInt8(ascii: "m") {
            guard let end = rest.firstIndex(of: UInt8(ascii: "\n")) else { return (nil, false) }
            announced = identity(announcedBy: String(decoding: rest[..<end], as: UTF8.self))
            rest = rest[(end + 1)...]
        }
        return (announced, rest.first == unmountedByte)
    }

    private static func identity(announcedBy line: String) -> Identity? {
        guard line.hasPrefix(announcedPrefix) else { return nil }
        let fields = line.dropFirst(announcedPrefix.count).split(separator: " ")
        guard fields.count == 2, fields[0].contains(":") else { return nil }
        if fields[1] == "-" { return Identity(device: String(fields[0]), mountID: nil) }
        guard let id = UInt64(fields[1]) else { return nil }
        return Identity(device: String(fields[0]), mountID: id)
    }

    /// Whether `path` shows a dpfs mount (from `source`, if given) whose connection has
    /// no daemon left: statfs (statvfs) is one request, which a dead connection refuses
    /// at once (ENOTCONN). It waits for a live daemon's answer.
    public static func showsDeadMount(at path: String, source: String? = nil) -> Bool {
        guard let shown = MountTable.topmost(at: path), shown.fsType == MountEntry.dpfsType,
              source.map({ shown.source == $0 }) ?? true else { return false }
        var info = statvfs()
        return statvfs(path, &info) != 0 && errno == ENOTCONN
    }

    private static let announcedPrefix = "m "

    /// What a daemon whose mount is gone writes to its watch.
    private static let unmountedByte = UInt8(ascii: "u")

    /// POSIX_SPAWN_SETSID, which Glibc's module hides behind _GNU_SOURCE.
    private static let newSessionFlag: Int16 = 0x80
}
