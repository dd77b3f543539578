// A real device for the tests: `dpfs init` with a 0600 passcode file and `dpfs mount`,
// both in a temporary directory; DPFS_MOUNT points at it. Mounting must work: a test
// that cannot mount fails. `tearDown` unmounts, and kills the daemon by its pid if the
// unmount does not end it.
import DataProtection
import DataProtectionKit
import Foundation
import Glibc
import XCTest

struct TestFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

final class MountedDevice {
    let work: URL
    let deviceDirectory: String
    let mountpoint: String
    let passcodeFile: String
    let wrongPasscodeFile: String
    let dpfs: String
    private(set) var daemonPID: Int32?

    var control: DeviceControl { DeviceControl(mountpoint: mountpoint) }
    var documents: URL { URL(fileURLWithPath: mountpoint).appendingPathComponent("Documents") }

    /// `passcode: false` makes a device without one (every class always available).
    init(gracePeriod: Double = 2, passcode: Bool = true) throws {
        dpfs = try Self.findDpfs()
        let base = ProcessInfo.processInfo.environment["TMPDIR"].flatMap { $0.isEmpty ? nil : $0 } ?? "/tmp"
        var template = Array("\(base)/dpfs-kit-tests.XXXXXX".utf8CString)
        guard let made = mkdtemp(&template) else { throw TestFailure("mkdtemp in \(base) failed") }
        work = URL(fileURLWithPath: String(cString: made))
        deviceDirectory = work.appendingPathComponent("device").path
        mountpoint = work.appendingPathComponent("mnt").path
        passcodeFile = work.appendingPathComponent("passcode").path
        wrongPasscodeFile = work.appendingPathComponent("wrong-passcode").path
        try FileManager.default.createDirectory(atPath: mountpoint, withIntermediateDirectories: true)
        try Self.writePrivate("1234\n", to: passcodeFile)
        try Self.writePrivate("9999\n", to: wrongPasscodeFile)
        do {
            let passcodeArguments = passcode ? ["--passcode-file", passcodeFile] : ["--no-passcode"]
            try run(["init", deviceDirectory] + passcodeArguments + [
                     "--secret-store", "file:" + work.appendingPathComponent("secrets").path, "--create"])
            try run(["mount", deviceDirectory, mountpoint, "--grace-period", String(gracePeriod)])
            guard isMounted else { throw TestFailure("dpfs mount returned but \(mountpoint) is not mounted") }
            daemonPID = try readDaemonPID()
        } catch {
            tearDown()
            throw error
        }
        setenv("DPFS_MOUNT", mountpoint, 1)
    }

    /// The binary from DPFS, else beside the test bundle (swift test builds it there:
    /// the test target depends on it), else .build/debug/dpfs of this package.
    static func findDpfs() throws -> String {
        var candidates: [String] = []
        if let explicit = ProcessInfo.processInfo.environment["DPFS"], !explicit.isEmpty { candidates.append(explicit) }
        let bundleDirectory = Bundle.main.bundleURL.deletingLastPathComponent()
        candidates.append(bundleDirectory.appendingPathComponent("dpfs").path)
        candidates.append(Bundle.main.bundleURL.appendingPathComponent("dpfs").path)
        let packageRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        candidates.append(packageRoot.appendingPathComponent(".build/debug/dpfs").path)
        guard let found = candidates.first(where: { FileManager.default.isExecutableFile(atPath: $0) }) else {
            throw TestFailure("no dpfs binary: set DPFS or run swift build (looked in \(candidates))")
        }
        return found
    }

    var isMounted: Bool {
        let mounts = ProcFile.read("/proc/mounts") ?? ""
        return mounts.split(separator: "\n").contains { $0.split(separator: " ").dropFirst().first.map(String.init) == mountpoint }
    }

    /// Runs dpfs with arguments; throws with its stderr when it fails. posix_spawn and
    /// waitpid rather than Foundation's Process, whose waitUntilExit was seen to miss the
    /// exit of `dpfs mount` (whose own child, the daemon, lives on) and hang.
    @discardableResult
    func run(_ arguments: [String]) throws -> String {
        try runTool(dpfs, arguments)
    }

    @discardableResult
    func runTool(_ tool: String, _ arguments: [String]) throws -> String {
        let outPath = work.appendingPathComponent("dpfs.out").path
        let errPath = work.appendingPathComponent("dpfs.err").path
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, outPath, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        posix_spawn_file_actions_addopen(&actions, 2, errPath, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        var argv: [UnsafeMutablePointer<CChar>?] = ([tool] + arguments).map { strdup($0) }
        argv.append(nil)
        defer { for argument in argv { free(argument) } }
        var pid: pid_t = 0
        let rc = posix_spawn(&pid, tool, &actions, nil, argv, environ)
        guard rc == 0 else { throw TestFailure("cannot start \(tool): \(String(cString: strerror(rc)))") }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        let out = (try? String(contentsOfFile: outPath, encoding: .utf8)) ?? ""
        guard status == 0 else {
            let err = (try? String(contentsOfFile: errPath, encoding: .utf8)) ?? ""
            throw TestFailure("\((tool as NSString).lastPathComponent) \(arguments.first ?? "") failed (wait status \(status)): \(err)")
        }
        return out
    }

    private func readDaemonPID() throws -> Int32? {
        let json = try run(["status", mountpoint, "--json"])
        let object = try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any]
        return (object?["pid"] as? NSNumber)?.int32Value
    }

    func tearDown() {
        ProtectedData.stopObserving()
        unsetenv("DPFS_MOUNT")
        if isMounted { _ = try? run(["unmount", mountpoint]) }
        if let pid = daemonPID {
            for _ in 0..<40 where kill(pid, 0) == 0 { usleep(50_000) }
        }
        if let pid = daemonPID, kill(pid, 0) == 0 {
            // The unmount did not end our daemon within 2 s: stop it, then make sure.
            kill(pid, SIGTERM)
            for _ in 0..<20 where kill(pid, 0) == 0 { usleep(50_000) }
            if kill(pid, 0) == 0 { kill(pid, SIGKILL) }
        }
        if isMounted { _ = try? runTool("/bin/fusermount3", ["-uz", mountpoint]) }
        try? FileManager.default.removeItem(at: work)
    }

    private static func writePrivate(_ text: String, to path: String) throws {
        guard FileManager.default.createFile(atPath: path, contents: Data(text.utf8),
                                             attributes: [.posixPermissions: 0o600]) else {
            throw TestFailure("cannot write \(path)")
        }
    }

    /// errno of open(2) for reading: 0 when it opens.
    static func openErrno(_ url: URL) -> Int32 {
        let fd = open(url.path, O_RDONLY | O_CLOEXEC)
        if fd < 0 { return errno }
        close(fd)
        return 0
    }
}

/// A test case with a device of its own, mounted before each test and taken down after.
class MountedDeviceTestCase: XCTestCase {
    var device: MountedDevice!

    override func setUpWithError() throws {
        device = try MountedDevice()
    }

    override func tearDown() {
        device?.tearDown()
        device = nil
    }
}
