// Takes a mount down when its daemon dies without unmounting (SIGKILL, a crash, a
// connection aborted through /sys/fs/fuse), in place of fusermount3's auto_unmount. A
// process of its own, `dpfs unmount MOUNTPOINT --when-closed 3 --source dpfs:DEVICE`,
// started just before the mount is made, waits on the read end of a pipe whose write
// end only the daemon holds. Once mounted, the daemon tells it which mount is its own:
// the connection (device number) and, from Linux 6.8, the mount id (one the kernel
// never gives twice; a device number goes to the next mount once it is free). A daemon
// whose mount is gone writes one byte more before it ends, and the guard just ends. If
// the pipe closes without that byte, the guard detaches the mount if the mount point
// still shows the daemon's mount. A daemon that died before its word named no mount:
// killed between its mount and the word, or while fusermount3 was still mounting for
// it (which then mounts and fails to hand over the connection). Then the guard waits
// up to ten seconds for a dpfs mount of this device there whose connection is dead
// (statfs fails with ENOTCONN, at once on a connection without a daemon, and as soon
// as fusermount3 lets go of one), and takes that down. Anything else mounted there
// stays, also a live mount whose daemon does not answer statfs.
//
// fusermount3 tells a dead daemon by an open of the mount root failing with ENOTCONN.
// Here the kernel opens directories itself, with no request (Directories.swift), so
// that open succeeds on a dead connection and fusermount3 would leave the mount behind.
import CFuse
import CLinux
import DataProtection
import Foundation
import Glibc
import Synchronization

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

    /// Whether `path` shows a dpfs mount from `source` whose connection has no daemon
    /// left: statfs (statvfs) is one request, which a dead connection refuses at once
    /// (ENOTCONN). It waits for a live daemon's answer.
    public static func showsDeadMount(at path: String, source: String) -> Bool {
        guard let shown = MountTable.topmost(at: path), shown.fsType == MountEntry.dpfsType,
              shown.source == source else { return false }
        var info = statvfs()
        return statvfs(path, &info) != 0 && errno == ENOTCONN
    }

    /// Whether `path` comes to show a dead dpfs mount from `source` within `seconds`
    /// (showsDeadMount, every 50 ms). The looking is done by a thread of its own, left
    /// behind if a statfs waits on a live daemon past the time: the guard then ends.
    public static func awaitDeadMount(at path: String, source: String, seconds: Int) -> Bool {
        let search = DeadMountSearch()
        let deadline = DispatchTime.now() + .seconds(seconds)
        Thread.detachNewThread {
            while DispatchTime.now() < deadline {
                if showsDeadMount(at: path, source: source) {
                    search.found.store(true, ordering: .releasing)
                    break
                }
                usleep(50_000)
            }
            search.done.signal()
        }
        _ = search.done.wait(timeout: deadline)
        return search.found.load(ordering: .acquiring)
    }

    private final class DeadMountSearch: Sendable {
        let found = Atomic<Bool>(false)
        let done = DispatchSemaphore(value: 0)
    }

    private static let announcedPrefix = "m "

    /// What a daemon whose mount is gone writes to its guard.
    private static let unmountedByte = UInt8(ascii: "u")

    /// POSIX_SPAWN_SETSID, which Glibc's module hides behind _GNU_SOURCE.
    private static let newSessionFlag: Int16 = 0x80
}
