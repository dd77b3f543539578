// Starts this executable again as a daemon: a new session, stdin from /dev/null,
// output to the device's log, and only the readiness pipe inherited. Any other
// descriptor the caller held would live as long as the mount: a test harness's pipe
// (bats reports on descriptor 3) would never see its end, and the caller's open
// directories would stay open under the daemon.
import CLinux
import Foundation
import Glibc

enum DaemonSpawner {
    static let setSessionFlag: Int16 = 0x80  // POSIX_SPAWN_SETSID, hidden behind _GNU_SOURCE

    /// The number the readiness pipe has in the daemon (its --ready-fd).
    static let readyDescriptor: Int32 = 3

    static func spawn(arguments: [String], logPath: String, readyPipe: Int32) throws -> pid_t {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, logPath, O_WRONLY | O_CREAT | O_APPEND, 0o600)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
        // A dup2 onto itself clears close-on-exec (glibc, as POSIX now asks).
        posix_spawn_file_actions_adddup2(&actions, readyPipe, readyDescriptor)
        posix_spawn_file_actions_addclosefrom_np(&actions, readyDescriptor + 1)
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        posix_spawnattr_setflags(&attributes, setSessionFlag)
        var argv: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) }
        argv.append(nil)
        defer { for argument in argv { free(argument) } }
        // Every symbol bound at the daemon's start, not at its first call: a first call
        // after the idle trim (session_loop.c) had the dynamic linker search the symbol
        // tables of every library, bringing back 1.7 MiB of pages the trim gave back.
        var environment: [UnsafeMutablePointer<CChar>?] = []
        var index = 0
        while let entry = environ[index] {
            if strncmp(entry, "LD_BIND_NOW=", 12) != 0 { environment.append(strdup(entry)) }
            index += 1
        }
        environment.append(strdup("LD_BIND_NOW=1"))
        environment.append(nil)
        defer { for entry in environment { free(entry) } }
        var pid: pid_t = 0
        let rc = posix_spawn(&pid, "/proc/self/exe", &actions, &attributes, argv, environment)
        guard rc == 0 else { throw CLIError("cannot start the dpfs daemon: \(String(cString: strerror(rc)))") }
        return pid
    }
}
