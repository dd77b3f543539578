// Takes a mount down when its daemon dies without unmounting (SIGKILL, a crash, a
// connection aborted through /sys/fs/fuse), in place of fusermount3's auto_unmount. A
// process of its own, `dpfs unmount MOUNTPOINT --when-closed 3 --source dpfs:DEVICE`,
// started just before the mount is made, waits on the read end of a pipe whose write
// end only the daemon holds. Once mounted, the daemon tells it which mount is its own:
// the connection (device number) and, from Linux 6.8, the mount id (one the kernel
// never gives twice; a device number goes to the next mount once it is free). A daemon
// whose mount is gone writes one byte more before it ends, and the guard just ends. If
// the pipe closes without that byte, the guard detaches the mount if the mount point
// still shows the daemon's mount. A daemon that died between its mount and its word
// (microseconds) named no mount: then the guard takes down a dpfs mount of this device
// there only if its connection is dead (statfs fails with ENOTCONN, as it does at once
// on a connection without a daemon). Anything else mounted there stays.
//
// fusermount3 tells a dead daemon by an open of the mount root failing with ENOTCONN.
// Here the kernel opens directories itself, with no request (Directories.swift), so
// that open succeeds on a dead connection and fusermount3 would leave the mount behind.
import CFuse
import CLinux
import DataProtection
import Glibc

public enum UnmountGuard {
    struct StartError: Error, CustomStringConvertible {
        let why: String
        var description: String { "cannot start the process that unmounts a dead daemon's mount: \(why)" }
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

        /// Whether `path` (absolute, without symlinks) still shows this mount.
        public func isShown(at path: String) -> Bool {
            guard let shown = MountTable.topmost(at: path), shown.device == device,
                  shown.fsType == MountEntry.dpfsType else { return false }
            guard let mountID else { return true }
            var id: UInt64 = 0
            return dpfs_mount_id(path, &id) == 1 && id == mountID
        }
    }

    /// Starts the guard of the mount about to be made at `mountpoint` (absolute, without
    /// symlinks) from `source` (the mount's fsname). Returns the pipe's write end,
    /// close-on-exec, to be held open as long as the daemon lives: its closing is the
    /// signal. Tell the guard the mount with `announce` once it is made.
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

    /// Tells the guard of `pipe` which mount is the daemon's: "m DEVICE ID\n", ID "-"
    /// where the kernel has no unique mount ids. One write, shorter than PIPE_BUF: the
    /// guard reads all of it or none.
    static func announce(_ pipe: Int32, mount: Identity) {
        let line = "\(announcedPrefix)\(mount.device) \(mount.mountID.map(String.init) ?? "-")\n"
        signal(SIGPIPE, SIG_IGN)
        _ = line.utf8CString.withUnsafeBufferPointer { write(pipe, $0.baseAddress, $0.count - 1) }
    }

    /// Lets the guard of `pipe` (start's result) end: with the byte that says the mount
    /// is gone if `unmounted`, else by closing the pipe only (the guard then checks).
    static func dismiss(_ pipe: Int32, unmounted: Bool) {
        if unmounted {
            // A guard already gone (killed) must not take the daemon with it.
            signal(SIGPIPE, SIG_IGN)
            var byte = unmountedByte
            _ = write(pipe, &byte, 1)
        }
        close(pipe)
    }

    /// How the daemon ended, as its guard saw it.
    public enum DaemonEnd: Equatable {
        /// It said its mount was gone.
        case unmounted
        /// Its process ended without saying so (or the pipe failed), having announced
        /// this mount, or none.
        case vanished(Identity?)
    }

    /// In the guard: waits on `pipe` until the daemon ends.
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
            if said.contains(unmountedByte) { return .unmounted }
        }
        return .vanished(announced(in: said))
    }

    /// The mount an "m DEVICE ID\n" line at the start of `said` names.
    static func announced(in said: [UInt8]) -> Identity? {
        guard let end = said.firstIndex(of: UInt8(ascii: "\n")) else { return nil }
        let line = String(decoding: said[..<end], as: UTF8.self)
        guard line.hasPrefix(announcedPrefix) else { return nil }
        let fields = line.dropFirst(announcedPrefix.count).split(separator: " ")
        guard fields.count == 2, fields[0].contains(":") else { return nil }
        if fields[1] == "-" { return Identity(device: String(fields[0]), mountID: nil) }
        guard let id = UInt64(fields[1]) else { return nil }
        return Identity(device: String(fields[0]), mountID: id)
    }

    /// Whether `path` shows a dpfs mount from `source` whose connection has no daemon
    /// left: statfs (statvfs) is one request, which a dead connection refuses at once (ENOTCONN).
    public static func showsDeadMount(at path: String, source: String) -> Bool {
        guard let shown = MountTable.topmost(at: path), shown.fsType == MountEntry.dpfsType,
              shown.source == source else { return false }
        var info = statvfs()
        return statvfs(path, &info) != 0 && errno == ENOTCONN
    }

    private static let announcedPrefix = "m "

    /// What a daemon whose mount is gone writes to its guard.
    private static let unmountedByte = UInt8(ascii: "u")

    /// POSIX_SPAWN_SETSID, which Glibc's module hides behind _GNU_SOURCE.
    private static let newSessionFlag: Int16 = 0x80
}
