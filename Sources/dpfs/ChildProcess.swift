// Starts a program with posix_spawnp (a Swift process with threads must not fork),
// with the default disposition and an open mask for the signals dpfs run forwards.
import Foundation
import Glibc

enum ChildProcess {
    struct SpawnError: Error, CustomStringConvertible {
        let program: String
        let code: Int32
        var description: String { "cannot run \(program): \(String(cString: strerror(code)))" }
    }

    static func spawn(_ command: [String], environment: [String: String], signalMask: sigset_t) throws -> pid_t {
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var mask = signalMask
        var defaults = sigset_t()
        sigemptyset(&defaults)
        for signal in ChildSignals.forwarded where !ChildSignals.isIgnored(signal) { sigaddset(&defaults, signal) }
        posix_spawnattr_setsigmask(&attributes, &mask)
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))

        var argv: [UnsafeMutablePointer<CChar>?] = command.map { strdup($0) }
        argv.append(nil)
        var envp: [UnsafeMutablePointer<CChar>?] = environment.map { strdup("\($0.key)=\($0.value)") }
        envp.append(nil)
        defer {
            for pointer in argv { free(pointer) }
            for pointer in envp { free(pointer) }
        }
        var pid: pid_t = 0
        let rc = posix_spawnp(&pid, command[0], nil, &attributes, argv, envp)
        guard rc == 0 else { throw SpawnError(program: command[0], code: rc) }
        return pid
    }
}
