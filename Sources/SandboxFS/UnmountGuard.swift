// Takes a mount down when its daemon dies without unmounting (SIGKILL, a crash), in
// place of fusermount3's auto_unmount. A process of its own, `dpfs unmount MOUNTPOINT
// --when-closed 3 --connection 0:N`, started right after the mount, waits on the read
// end of a pipe whose write end only the daemon holds. A daemon that has unmounted
// writes one byte there before it ends, and the guard just ends. If the pipe closes
// without it (the process ended some other way), the guard detaches the mount if the
// mount point still shows this daemon's connection (its device number, which a dead
// daemon's mount keeps until it is unmounted); anything else mounted there stays.
// Only the byte tells a clean end: a device number is reused by the next mount once
// it is free, and the next mount may already be there.
//
// fusermount3 tells a dead daemon by an open of the mount root failing with ENOTCONN.
// Here the kernel opens directories itself, with no request (Directories.swift), so
// that open succeeds on a dead connection and fusermount3 would leave the mount behind.
import CFuse
import CLinux
import Glibc

public enum UnmountGuard {
    struct StartError: Error, CustomStringConvertible {
        let why: String
        var description: String { "cannot start the process that unmounts a dead daemon's mount: \(why)" }
    }

    /// Starts the guard of the mount of `device` ("major:minor") at `mountpoint` (as
    /// /proc/self/mountinfo shows it). Returns the pipe's write end, close-on-exec, to
    /// be held open as long as the daemon lives: its closing is the signal.
    static func start(mountpoint: String, device: String) throws -> Int32 {
        var ends: [Int32] = [0, 0]
        guard pipe(&ends) == 0 else { throw StartError(why: String(cString: strerror(errno))) }
        let (readEnd, writeEnd) = (ends[0], ends[1])
        defer { close(readEnd) }
        _ = fcntl(readEnd, F_SETFD, FD_CLOEXEC)
        _ = fcntl(writeEnd, F_SETFD, FD_CLOEXEC)
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        // Its own stdin, the daemon's output (the device's log), the pipe as descriptor
        // 3, and nothing else: above all not /dev/fuse, which would keep the connection.
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
        let arguments = ["dpfs", "unmount", mountpoint, "--when-closed", "3", "--connection", device]
        var argv: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) }
        argv.append(nil)
        defer { for argument in argv { free(argument) } }
        var pid: pid_t = 0
        let rc = posix_spawn(&pid, "/proc/self/exe", &actions, &attributes, argv, environ)
        guard rc == 0 else {
            close(writeEnd)
            throw StartError(why: String(cString: strerror(rc)))
        }
        // Not waited for: it outlives the daemon. Its parent becomes init (or the
        // nearest subreaper), which reaps it.
        return writeEnd
    }

    /// Tells the guard of `pipe` (start's result) that the mount is gone, and lets it end.
    static func dismiss(_ pipe: Int32) {
        var unmounted = unmountedByte
        _ = write(pipe, &unmounted, 1)
        close(pipe)
    }

    /// In the guard: waits on `pipe` until the daemon ends. True if it said it had
    /// unmounted, false if its process ended without a word (or the pipe failed).
    public static func awaitDaemonEnd(_ pipe: Int32) -> Bool {
        // What starting the runtime touched of the program and its libraries is not
        // needed while it waits: 18 of its 24 MiB resident (shared with the daemon).
        dpfs_release_code_pages()
        var byte: UInt8 = 0
        var n = 0
        repeat { n = read(pipe, &byte, 1) } while n < 0 && errno == EINTR
        return n == 1 && byte == unmountedByte
    }

    /// What a daemon that has unmounted writes to its guard.
    private static let unmountedByte = UInt8(ascii: "u")

    /// POSIX_SPAWN_SETSID, which Glibc's module hides behind _GNU_SOURCE.
    private static let newSessionFlag: Int16 = 0x80
}
