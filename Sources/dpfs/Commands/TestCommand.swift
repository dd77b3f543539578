// dpfs test: a Swift package's tests against a device, as `xcodebuild test` runs an
// app's tests on a simulator — built outside the device, the test bundle run as the
// app inside the sandbox (SwiftTestRunner). `dpfs run MNT -- swift test …` does the same.
import ArgumentParser
import DataProtection
import Foundation

struct Test: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Run `swift test`: built outside the device, the test bundle run as the app inside the sandbox.",
        discussion: """
            SwiftPM, the compilers and their caches, locks and temporary files stay in the \
            caller's own environment (the package's .build, ~/.cache); only the test bundle \
            runs under `dpfs run`, so the tests work in every lock state, before the first \
            unlock included, and leave no tool cache in the device. The arguments after -- \
            are swift test's. `dpfs run MNT -- swift test …` does the same. Exits with swift \
            test's status.
            """)

    @Argument(help: "The mountpoint of a mounted dpfs sandbox.") var mountpoint: String
    @Option(help: "Run the tests as this registered app (default: the sandbox's own app).") var app: String?
    @Flag(help: "Let the tests lock, unlock and restart the device, as a test host does.") var deviceControl = false
    @Flag(help: "Run the test bundle without bubblewrap (see dpfs run).") var noIsolation = false
    @Option(help: ArgumentHelp("The swift driver to run, looked up on PATH.", valueName: "path"))
    var swift = "swift"
    @Argument(parsing: .postTerminator, help: "swift test's arguments, after --.") var arguments: [String] = []

    func run() throws {
        let signals = ChildSignals.blockForwardedSignals()
        let mount = AbsolutePath.of(mountpoint)
        // Refused here, before a build: a path that is no sandbox, an app not registered, a
        // machine without bubblewrap (said once, not once per run of the bundle).
        _ = try AppSession(mount: mount, app: app, deviceControl: deviceControl)
        if !noIsolation { try BubblewrapCheck.requireInstalled() }
        let runner = SwiftTestRunner(mount: mount, app: app, deviceControl: deviceControl, noIsolation: noIsolation)
        throw ExitCode(try runner.run([swift, "test"] + arguments, signals: signals))
    }
}
