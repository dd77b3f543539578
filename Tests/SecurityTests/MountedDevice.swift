// A real device for the Security tests: `dpfs init` and `dpfs mount` into temporary
// directories, driven by the dpfs binary (env DPFS, else .build/debug/dpfs, which
// `swift test` builds). Mounting must work: no /dev/fuse is a failure, not a skip.
import Foundation
import Security
import XCTest

final class MountedDevice {
    let work: URL
    let deviceDirectory: String
    let mountpoint: String
    let passcodeFile: String
    private(set) var daemonPID: Int32?

    static var binary: String {
        if let path = ProcessInfo.processInfo.environment["DPFS"], !path.isEmpty { return path }
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        return root.appendingPathComponent(".build/debug/dpfs").path
    }

    init() throws {
        guard FileManager.default.isExecutableFile(atPath: Self.binary) else {
            throw DeviceError("no dpfs binary at \(Self.binary): run `swift build` or set DPFS")
        }
        guard FileManager.default.fileExists(atPath: "/dev/fuse") else {
            throw DeviceError("/dev/fuse is missing: the Security tests need a real mount")
        }
        work = FileManager.default.temporaryDirectory.appendingPathComponent("dpfs-security-\(UUID().uuidString)")
        deviceDirectory = work.appendingPathComponent("device").path
        mountpoint = work.appendingPathComponent("mnt").path
        passcodeFile = work.appendingPathComponent("pass.txt").path
        try FileManager.default.createDirectory(atPath: mountpoint, withIntermediateDirectories: true)
        guard FileManager.default.createFile(atPath: passcodeFile, contents: Data("1234\n".utf8),
                                             attributes: [.posixPermissions: 0o600]) else {
            throw DeviceError("cannot write \(passcodeFile)")
        }
        try dpfs("init", deviceDirectory, "--passcode-file", passcodeFile,
                 "--secret-store", "file:" + work.appendingPathComponent("secrets").path, "--create")
        try dpfs("mount", deviceDirectory, mountpoint)
        daemonPID = Self.pid(fromStatus: try dpfs("status", mountpoint, "--json"))
        try unlock()
    }

    func unlock() throws { try dpfs("unlock", mountpoint, "--passcode-file", passcodeFile) }
    func lockNow() throws { try dpfs("lock", mountpoint, "--now") }
    func restart() throws { try dpfs("restart", mountpoint) }

    /// Registers another app whose access groups are `groups` (TEAMID-prefixed).
    func addApp(_ applicationIdentifier: String, groups: [String]) throws {
        let plist = work.appendingPathComponent("\(UUID().uuidString).plist")
        let entitlements: [String: Any] = ["application-identifier": applicationIdentifier,
                                           "keychain-access-groups": groups]
        try PropertyListSerialization.data(fromPropertyList: entitlements, format: .xml, options: 0).write(to: plist)
        try dpfs("app", "add", mountpoint, "--entitlements", plist.path)
    }

    /// Unmounts; if that fails, ends the daemon we started by its pid.
    func tearDown() {
        if (try? dpfs("unmount", mountpoint)) == nil, let daemonPID, kill(daemonPID, 0) == 0 {
            kill(daemonPID, SIGTERM)
            usleep(500_000)
            kill(daemonPID, SIGKILL)
            _ = try? Self.run(["-uz", mountpoint], executable: "/usr/bin/fusermount3")
        }
        try? FileManager.default.removeItem(at: work)
    }

    @discardableResult
    func dpfs(_ arguments: String...) throws -> String {
        let (status, output, errors) = try Self.run(arguments, executable: Self.binary)
        guard status == 0 else { throw DeviceError("dpfs \(arguments.joined(separator: " ")): \(errors)") }
        return output
    }

    /// Spawns and waits with posix_spawn and waitpid. Output goes through files, not
    /// pipes: `dpfs mount` leaves a daemon behind that inherits them, and a pipe would
    /// never reach end-of-file.
    static func run(_ arguments: [String], executable: String) throws -> (Int32, String, String) {
        let base = FileManager.default.temporaryDirectory.appendingPathComponent("dpfs-run-\(UUID().uuidString)").path
        let outPath = base + ".out", errPath = base + ".err"
        defer { unlink(outPath); unlink(errPath) }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, outPath, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        posix_spawn_file_actions_addopen(&actions, 2, errPath, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        let argv = ([executable] + arguments).map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        var pid: pid_t = 0
        let spawned = posix_spawn(&pid, executable, &actions, nil, argv, environ)
        guard spawned == 0 else { throw DeviceError("cannot run \(executable): \(String(cString: strerror(spawned)))") }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        let exitCode = (status & 0x7f) == 0 ? (status >> 8) & 0xff : 128 + (status & 0x7f)
        let output = (try? String(contentsOfFile: outPath, encoding: .utf8)) ?? ""
        let errors = (try? String(contentsOfFile: errPath, encoding: .utf8)) ?? ""
        return (exitCode, output, errors)
    }

    private static func pid(fromStatus json: String) -> Int32? {
        guard let object = try? JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any] else { return nil }
        return (object["pid"] as? Int).map(Int32.init)
    }
}

struct DeviceError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// A test case with a mounted, unlocked device whose sandbox app is the caller.
class MountedDeviceTestCase: XCTestCase {
    var device: MountedDevice!

    override func setUpWithError() throws {
        device = try MountedDevice()
        setenv("DPFS_MOUNT", device.mountpoint, 1)
        unsetenv("DPFS_APP")
    }

    override func tearDown() {
        device?.tearDown()
        unsetenv("DPFS_MOUNT")
        unsetenv("DPFS_APP")
    }

    /// The attributes of the item `query` finds, which must exist.
    func foundAttributes(_ query: [String: Any]) throws -> [String: Any] {
        var find = query
        find[kSecReturnAttributes as String] = true
        var result: CFTypeRef?
        XCTAssertEqual(SecItemCopyMatching(find as CFDictionary, &result), errSecSuccess, "\(query)")
        return try XCTUnwrap(result as? [String: Any])
    }

    /// The status and data of a find of `query`.
    func foundData(_ query: [String: Any]) -> (OSStatus, Data?) {
        var find = query
        find[kSecReturnData as String] = true
        var result: CFTypeRef?
        let status = SecItemCopyMatching(find as CFDictionary, &result)
        return (status, result as? Data)
    }
}
