// A device mounted for the length of one command (dpfs restore fills a new device
// through it) on a private directory of its own: by this executable's own `mount`,
// and taken down again by `unmount`'s means, waiting for the daemon to end so that
// the device is whole on disk when the command goes on. The directory is the build
// directory's name with `mountSuffix`, beside it, so that the clean-up that removes
// what a killed command left (BuildDirectory.removeAbandoned) finds it too.
import DataProtection
import DPFSProtocol
import Foundation
import Glibc

final class TemporaryMount {
    let mountpoint: String
    private var daemonPID: pid_t?
    private var mounted = false

    static let mountSuffix = ".mnt"

    /// Mounts the device being built in `directory` (a BuildDirectory's).
    init(_ directory: DeviceDirectory) throws {
        mountpoint = directory.root + Self.mountSuffix
        guard mkdir(mountpoint, 0o700) == 0 else {
            throw CLIError("cannot make a temporary mount point beside \(directory.root): \(String(cString: strerror(errno)))")
        }
        do {
            // Killed (SIGKILL, the OOM killer), the command takes down nothing itself:
            // the daemon sees it end and stops as on SIGTERM, locked first.
            try run(["mount", directory.root, mountpoint, "--inactivity-reboot", "0", "--end-with", String(getpid())])
            mounted = true
            daemonPID = try DaemonDeadline.client(for: mountpoint).send(.status).status?.pid
        } catch {
            takeDown()
            throw error
        }
    }

    /// Runs this executable with `arguments` and waits for it. posix_spawn and
    /// waitpid, not Foundation's Process: the daemon `mount` starts inherits whatever
    /// Process watches for the child's end, which would then wait for the daemon.
    /// Its stderr goes to a file, for the same reason, read back on failure.
    private func run(_ arguments: [String]) throws {
        var template = Array((NSTemporaryDirectory() + "/dpfs-restore-mount-XXXXXX").utf8CString)
        let errors = mkstemp(&template)
        guard errors >= 0 else { throw CLIError("cannot make a temporary file: \(String(cString: strerror(errno)))") }
        unlink(template)
        defer { close(errors) }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
        posix_spawn_file_actions_adddup2(&actions, errors, 2)
        var argv: [UnsafeMutablePointer<CChar>?] = ([Self.executable] + arguments).map { strdup($0) }
        argv.append(nil)
        defer { for argument in argv { free(argument) } }
        var pid: pid_t = 0
        let rc = posix_spawn(&pid, Self.executable, &actions, nil, argv, environ)
        guard rc == 0 else { throw CLIError("cannot run dpfs mount: \(String(cString: strerror(rc)))") }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        guard status == 0 else {
            var message = [UInt8](repeating: 0, count: 4096)
            let n = max(0, pread(errors, &message, message.count, 0))
            let text = String(decoding: message[0..<n], as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
            throw CLIError("cannot mount the new device: \(text.isEmpty ? "dpfs mount failed" : text)")
        }
    }

    /// This executable, as the kernel knows it.
    private static var executable: String {
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        let n = readlink("/proc/self/exe", &buffer, buffer.count - 1)
        guard n > 0 else { return CommandLine.arguments[0] }
        return String(decoding: buffer[0..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// Unmounts (the daemon flushes and exits), waits up to 30 s for the daemon to be
    /// gone, and removes the mount point. True when the daemon ended.
    @discardableResult
    func takeDown() -> Bool {
        var ended = true
        if mounted {
            if Unmount.fusermountUnmount(mountpoint, lazily: false) != 0 {
                _ = Unmount.fusermountUnmount(mountpoint, lazily: true)
            }
            mounted = false
            if let pid = daemonPID {
                let deadline = ContinuousClock.now + .seconds(30)
                while kill(pid, 0) == 0 && ContinuousClock.now < deadline { usleep(20_000) }
                ended = kill(pid, 0) != 0
            }
        }
        rmdir(mountpoint)
        return ended
    }
}
