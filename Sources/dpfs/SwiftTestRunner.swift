// `swift test` for a device, as `xcodebuild test` runs an app's tests on a simulator:
// SwiftPM, the compilers and their caches, locks and temporary files stay outside the
// device, in the caller's own environment (the package's .build, ~/.cache), and only
// the test bundle runs as the app inside the sandbox. SwiftPM starts the bundle through
// the test runner a toolset names (SE-0378): here `dpfs run MNT [--app …] --`, so every
// run of the bundle — XCTest's, swift-testing's, each of --parallel's — is the app's.
// Nothing of the build is in the device, so `swift test` works in every lock state,
// before the first unlock included.
import ArgumentParser
import Foundation
import Glibc

struct SwiftTestRunner {
    let mount: String
    let app: String?
    let deviceControl: Bool
    let noIsolation: Bool

    /// Whether `command` is SwiftPM's test command (`swift test …`, `swift-test …`),
    /// which `dpfs run` runs this way.
    static func isSwiftTest(_ command: [String]) -> Bool {
        guard let program = command.first.map({ ($0 as NSString).lastPathComponent }) else { return false }
        return program == "swift-test" || (program == "swift" && command.dropFirst().first == "test")
    }

    /// The test runner's command line before the bundle's path and arguments. Each run
    /// ends with this process (TestRunTie), which SwiftPM's process group hides it from.
    func runnerArguments() throws -> [String] {
        guard let me = ProcessIdentity.of(getpid()) else { throw CLIError("cannot read this process's start in /proc") }
        var arguments = ["run", mount, "--ends-with", me.argument]
        if let app { arguments += ["--app", app] }
        if deviceControl { arguments.append("--device-control") }
        if noIsolation { arguments.append("--no-isolation") }
        return arguments + ["--"]
    }

    /// Runs `command` (`swift test ARGS` or `swift-test ARGS`) with a toolset whose test
    /// runner is `dpfs run`, in the caller's environment; its exit status.
    func run(_ command: [String], signals: (set: sigset_t, previous: sigset_t)) throws -> Int32 {
        guard let dpfs = Bundle.main.executablePath else { throw CLIError("cannot find the dpfs binary to run the tests with") }
        let directory = try TestToolsetDirectory.make(in: Self.temporaryBase())
        defer { directory.remove() }
        let toolset = directory.path + "/dpfs-toolset.json"
        try writeToolset(to: toolset, dpfs: dpfs)
        // The toolset right after the subcommand, before the caller's arguments.
        let split = (command.first.map { ($0 as NSString).lastPathComponent } == "swift-test") ? 1 : 2
        let arguments = Array(command.prefix(split)) + ["--toolset", toolset] + command.dropFirst(split)
        OrphanedDescendants.adopt()
        let child: pid_t
        do {
            // SwiftPM is the developer's tool, not the app: it keeps the caller's
            // descriptors; the test bundle it starts through dpfs run gets none of them.
            child = try ChildProcess.spawn(arguments, environment: ProcessInfo.processInfo.environment,
                                           signalMask: signals.previous, descriptors: .inherited)
        } catch let error as ChildProcess.SpawnError {
            FileHandle.standardError.write(Data("Error: \(error.description)\n".utf8))
            throw ExitCode(error.code == ENOENT ? 127 : 126)
        }
        let status = ChildSignals.forwardUntilExit(of: child, signals: signals.set)
        OrphanedDescendants.endAll()
        return status
    }

    private func writeToolset(to path: String, dpfs: String) throws {
        struct Tool: Encodable { let path: String; let extraCLIOptions: [String] }
        struct Toolset: Encodable { let schemaVersion = "1.0"; let testRunner: Tool }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        let data = try encoder.encode(Toolset(testRunner: Tool(path: dpfs, extraCLIOptions: try runnerArguments())))
        guard FileManager.default.createFile(atPath: path, contents: data, attributes: [.posixPermissions: 0o600]) else {
            throw CLIError("cannot write the test toolset \(path)")
        }
    }

    /// The caller's temporary directory (outside the device).
    private static func temporaryBase() -> String {
        ProcessInfo.processInfo.environment["TMPDIR"].flatMap { $0.isEmpty ? nil : $0 } ?? "/tmp"
    }
}
