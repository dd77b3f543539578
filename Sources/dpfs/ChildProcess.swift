// Starts a program with posix_spawnp (a Swift process with threads must not fork),
// with the default disposition and an open mask for the signals dpfs run forwards.
import CLinux
import Foundation
import Glibc

enum ChildProcess {
    struct SpawnError: Error, CustomStringConvertible {
        let program: String
        let code: Int32
        var description: String { "cannot run \(program): \(String(cString: strerror(code)))" }
    }

    /// Which of the caller's descriptors the program gets.
    enum Descriptors {
        /// Every one open without close-on-exec (the developer's own tools: SwiftPM).
        case inherited
        /// Standard input, output and error, and `passing` (if any) as `passedDescriptor`:
        /// an app must not get a descriptor its caller happened to hold open (a
        /// directory of the mount, of the device directory), which would reach past
        /// its view of the machine.
        case standard(passing: Int32?)
    }

    /// The number the descriptor `.standard(passing:)` names has in the program.
    static let passedDescriptor: Int32 = 3

    static func spawn(_ command: [String], environment: [String: String], signalMask: sigset_t,
                      descriptors: Descriptors) throws -> pid_t {
        try spawn(command.map(RawArgument.init), environment: environment, signalMask: signalMask, descriptors: descriptors)
    }

    static func spawn(_ command: [RawArgument], environment: [String: String], signalMask: sigset_t,
                      descriptors: Descriptors) throws -> pid_t {
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
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        addActions(for: descriptors, to: &actions)

        var argv: [UnsafeMutablePointer<CChar>?] = command.map { strdup($0.bytes) }
        argv.append(nil)
        var envp: [UnsafeMutablePointer<CChar>?] = environment.map { strdup("\($0.key)=\($0.value)") }
        envp.append(nil)
        defer {
            for pointer in argv { free(pointer) }
            for pointer in envp { free(pointer) }
        }
        var pid: pid_t = 0
        let rc = posix_spawnp(&pid, command[0].bytes, &actions, &attributes, argv, envp)
        guard rc == 0 else { throw SpawnError(program: command[0].display, code: rc) }
        return pid
    }

    /// The closing is done in the child, between its fork and exec, so that it also
    /// catches a descriptor another thread opened without close-on-exec meanwhile.
    private static func addActions(for descriptors: Descriptors, to actions: inout posix_spawn_file_actions_t) {
        guard case .standard(let passing) = descriptors else { return }
        var firstClosed = passedDescriptor
        if let passing {
            // A dup2 onto itself clears close-on-exec (glibc, as POSIX now asks).
            posix_spawn_file_actions_adddup2(&actions, passing, passedDescriptor)
            firstClosed += 1
        }
        posix_spawn_file_actions_addclosefrom_np(&actions, firstClosed)
    }
}
