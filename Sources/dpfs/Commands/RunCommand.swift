// dpfs run: runs a program as one app inside the sandbox, with the environment that
// makes Foundation's directories land in the iOS layout of the mount. The program is
// only that app: its requests go to an app socket that acts as it alone, and in its
// own view of the machine (AppView) the device's owner socket, the device directory
// and other apps' containers are not there, nor is any descriptor its caller held
// open but 0, 1 and 2 (ChildProcess.Descriptors).
import ArgumentParser
import DataProtection
import DPFSProtocol
import Foundation
import Glibc

struct Run: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Run a program as the app inside the sandbox (HOME, TMPDIR, XDG_* and DPFS_* set).",
        discussion: """
            The program's Documents, Library/Caches, Library/Application Support and tmp \
            directories (as Foundation finds them) are the mount's, or another app's own \
            container with --app. It acts only as its app: it cannot name another app, \
            and runs in a view of its own (bubblewrap) without the device directory, the \
            secret store, the device's control socket, other apps' containers, other dpfs \
            mounts, their device directories and file stores, or the default file stores, and \
            of the caller's open descriptors it gets standard input, output and error only. \
            `swift test` is run as `dpfs test` runs it: built outside the device, only its \
            test bundle inside. dpfs run \
            exits with the program's status, or 128+N when a signal N ended it, or 126 when \
            bubblewrap cannot make its sandbox (where user namespaces are not allowed: give \
            --no-isolation), and passes SIGINT, SIGTERM, SIGHUP and SIGQUIT on to it.
            """)

    @Argument(help: "The mountpoint of a mounted dpfs sandbox.") var mountpoint: String
    @Option(help: "Run as this registered app (default: the sandbox's own app).") var app: String?
    @Flag(help: "Let the program lock, unlock and restart the device and change its passcode, as a test host does.")
    var deviceControl = false
    @Flag(help: "Run in the caller's own view of the machine (no bubblewrap): the program can then reach the device as its owner.")
    var noIsolation = false
    /// The dpfs test that started this run through SwiftPM (TestRunTie), as "PID:TICKS".
    @Option(help: .private) var endsWith: String?
    @Argument(parsing: .postTerminator, help: "The program and its arguments, after --.") var command: [String] = []

    func validate() throws {
        guard !command.isEmpty else { throw ValidationError("give the program to run after --, e.g. dpfs run MNT -- ./MyAppTests") }
        if let endsWith, ProcessIdentity(argument: endsWith) == nil { throw ValidationError("--ends-with takes PID:TICKS") }
    }

    func run() throws {
        // Blocked before anything else so a signal that arrives early is forwarded, not fatal.
        let forwarded = ChildSignals.blockForwardedSignals()
        let tie = try endsWith.flatMap { ProcessIdentity(argument: $0) }.flatMap { try TestRunTie.open($0) }
        if !noIsolation { try BubblewrapCheck.requireInstalled() }
        let mount = AbsolutePath.of(mountpoint)
        let session = try AppSession(mount: mount, app: app, deviceControl: deviceControl)
        // SwiftPM and the compilers are not the app: `swift test` builds outside the
        // device and runs only its test bundle in here (SwiftTestRunner).
        if SwiftTestRunner.isSwiftTest(command) {
            let runner = SwiftTestRunner(mount: mount, app: app, deviceControl: deviceControl, noIsolation: noIsolation)
            throw ExitCode(try runner.run(command, signals: forwarded))
        }
        // A test run's program is SwiftPM's test bundle, which a simulator's host app
        // would give the app's bundle ID.
        if endsWith != nil, let bundle = command.first { TestBundleInfoPlist.provide(for: bundle, bundleID: session.bundleID) }
        let view = AppView(mount: AbsolutePath.of(mount), session: session)
        try view.makeContainer()
        let environment = SandboxEnvironment.make(mount: mount, home: noIsolation ? view.container : mount,
                                                  app: session.bundleID, socket: session.socket,
                                                  dpfs: Bundle.main.executablePath, inherited: ProcessInfo.processInfo.environment)
        let program = RawArguments.trailing(command)
        let status = try session.hold {
            noIsolation
                ? try Self.runDirectly(program, environment: environment, signals: forwarded, tie: tie)
                : try Self.runIsolated(program, in: view, environment: environment, signals: forwarded, tie: tie)
        }
        throw ExitCode(status)
    }

    /// Tied to a dpfs test, the program's whole tree ends with it: this process adopts
    /// the descendants whose parents end, and kills them once the program is killed.
    private static func runDirectly(_ command: [RawArgument], environment: [String: String],
                                    signals: (set: sigset_t, previous: sigset_t), tie: TestRunTie?) throws -> Int32 {
        if tie != nil { OrphanedDescendants.adopt() }
        let child = try spawnReporting(command, environment: environment, mask: signals.previous,
                                       descriptors: .standard(passing: nil))
        tie?.killOnEnd(child)
        let status = ChildSignals.forwardUntilExit(of: child, signals: signals.set)
        if let tie, tie.hasEnded { OrphanedDescendants.endAll(grace: .zero) }
        return status
    }

    /// bwrap keeps the forwarded signals blocked (it forwards none, and must outlive a
    /// terminal's Ctrl-C to report the status); they go to the sandbox's PID 1 instead.
    /// A tie kills bwrap, whose sandbox dies with it (--die-with-parent) once it stands;
    /// a sandbox still being made has no death signal yet (bwrap asks for it just before
    /// the program starts), so this process adopts it and kills it.
    private static func runIsolated(_ command: [RawArgument], in view: AppView, environment: [String: String],
                                    signals: (set: sigset_t, previous: sigset_t), tie: TestRunTie?) throws -> Int32 {
        guard let dpfs = Bundle.main.executablePath else { throw CLIError("cannot find the dpfs binary to start the sandbox") }
        var info: [Int32] = [0, 0]
        guard pipe(&info) == 0 else { throw CLIError("cannot make a pipe: \(String(cString: strerror(errno)))") }
        defer { close(info[0]) }
        _ = fcntl(info[0], F_SETFD, FD_CLOEXEC)  // the write end is bwrap's --info-fd
        var blocked = sigset_t()
        pthread_sigmask(SIG_BLOCK, nil, &blocked)
        if tie != nil { OrphanedDescendants.adopt() }
        let bwrap: pid_t
        do {
            let arguments = try view.command(command, infoFD: ChildProcess.passedDescriptor, dpfsBinary: dpfs,
                                         workingDirectory: FileManager.default.currentDirectoryPath)
            bwrap = try spawnReporting(arguments, environment: environment, mask: blocked,
                                       descriptors: .standard(passing: info[1]))
        } catch {
            close(info[1])
            throw error
        }
        close(info[1])
        tie?.killOnEnd(bwrap)
        let sandboxInit = SandboxInfo.childPID(from: info[0])
        let status = ChildSignals.forwardUntilExit(of: bwrap, signals: signals.set, to: sandboxInit ?? bwrap)
        if let tie, tie.hasEnded { OrphanedDescendants.endAll(grace: .zero) }
        // Without the sandbox's PID bwrap failed before the program started: its
        // status would pass for the program's own.
        guard sandboxInit == nil, status != 0, tie?.hasEnded != true else { return status }
        FileHandle.standardError.write(Data((Self.noSandbox + "\n").utf8))
        return 126
    }

    static let noSandbox = "Error: bubblewrap could not make the app's sandbox (its message is above); "
        + "where user namespaces are not allowed, give --no-isolation"

    private static func spawnReporting(_ command: [RawArgument], environment: [String: String], mask: sigset_t,
                                       descriptors: ChildProcess.Descriptors) throws -> pid_t {
        do {
            return try ChildProcess.spawn(command, environment: environment, signalMask: mask, descriptors: descriptors)
        } catch let error as ChildProcess.SpawnError {
            FileHandle.standardError.write(Data("Error: \(error.description)\n".utf8))
            throw ExitCode(error.code == ENOENT ? 127 : 126)
        }
    }
}

/// What bwrap writes to --info-fd: JSON whose "child-pid" is the sandbox's PID 1 as
/// this namespace numbers it. Nothing (bwrap failed) leaves it unknown.
enum SandboxInfo {
    struct Info: Decodable {
        let childPID: pid_t
        enum CodingKeys: String, CodingKey { case childPID = "child-pid" }
    }

    static func childPID(from fd: Int32) -> pid_t? {
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while bytes.count < 1 << 16 {
            let n = read(fd, &buffer, buffer.count)
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { break }
            bytes += buffer[..<n]
        }
        return (try? JSONDecoder().decode(Info.self, from: Data(bytes)))?.childPID
    }
}
