// dpfs sandbox-init: PID 1 of the view `dpfs run` makes (AppView). It starts the
// program with the signals `dpfs run` forwards unblocked, passes those signals on,
// and exits with the program's status; when it exits, the kernel ends whatever the
// program left running in the namespace.
import ArgumentParser
import Foundation
import Glibc

struct SandboxInit: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sandbox-init", abstract: "The first process of dpfs run's sandbox.", shouldDisplay: false)

    @Argument(parsing: .postTerminator) var command: [String] = []

    func run() throws {
        guard !command.isEmpty else { throw ValidationError("give the program to run after --") }
        // bwrap started this with the forwarded signals blocked; the program gets them
        // unblocked, as dpfs run's caller had them.
        let forwarded = ChildSignals.blockForwardedSignals()
        var mask = forwarded.previous
        for signal in ChildSignals.forwarded + [SIGCHLD] { sigdelset(&mask, signal) }
        let child: pid_t
        do {
            // Whatever bwrap left open stays here: the program gets 0, 1 and 2 only.
            child = try ChildProcess.spawn(RawArguments.trailing(command), environment: ProcessInfo.processInfo.environment, signalMask: mask,
                                           descriptors: .standard(passing: nil))
        } catch let error as ChildProcess.SpawnError {
            FileHandle.standardError.write(Data("Error: \(error.description)\n".utf8))
            throw ExitCode(error.code == ENOENT ? 127 : 126)
        }
        throw ExitCode(ChildSignals.forwardUntilExit(of: child, signals: forwarded.set))
    }
}
