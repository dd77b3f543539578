// What writes a kill cut short leave, a metadata file's "<name>.tmp-<pid>" written but
// never renamed, is removed when the device is opened: the temporary of a process
// that no longer runs, or one made before the open; a newer one of a live process
// (a write under way) stays, and so does anything else by a like name.
import DataProtection
import Foundation
import XCTest

final class StaleTemporaryTests: XCTestCase {
    /// A pid no process has: pids stay below the kernel's limit.
    private func deadPID() throws -> pid_t {
        let text = try String(contentsOfFile: "/proc/sys/kernel/pid_max", encoding: .utf8)
        return try XCTUnwrap(pid_t(text.trimmingCharacters(in: .whitespacesAndNewlines)))
    }

    /// A regular file at `path`, last modified `age` seconds ago (negative: ahead).
    private func plant(_ path: String, age: Int = 0) throws {
        XCTAssertTrue(FileManager.default.createFile(atPath: path, contents: Data("{\"half\":".utf8)))
        var times = [timespec(tv_sec: time(nil) - age, tv_nsec: 0), timespec(tv_sec: time(nil) - age, tv_nsec: 0)]
        XCTAssertEqual(utimensat(AT_FDCWD, path, &times, 0), 0)
    }

    private func exists(_ path: String) -> Bool { access(path, F_OK) == 0 }

    func testTheOpenRemovesWhatKilledWritesLeft() throws {
        let device = try TestDevice()
        let uuid = try device.boot().deviceUUID
        let dead = try deadPID()
        let root = device.directory.root
        let record = DeviceRecordStore.statePath(of: uuid, in: device.secretStore)
        let stale = [device.directory.keybagPath, root + "/biometry.json", device.directory.syncStatePath, record]
            .map { "\($0).tmp-\(dead)" }
            + [device.directory.keybagPath + ".tmp-\(getpid())"]  // a pid given to a live process since: older
        for path in stale.dropLast() { try plant(path) }
        try plant(stale[stale.count - 1], age: 3600)
        let kept = [
            record + ".tmp-\(getpid())",                 // a live process's write, since the open
            device.directory.keybagPath + ".tmp-12ab",   // not a pid
            device.directory.keybagPath + ".tmp-",
            root + "/keychain.sqlite.tmp-\(dead)",       // not a file written so
            device.secretStore + "/another-device.state.tmp-\(dead)",
        ]
        try plant(kept[0], age: -3600)
        for path in kept.dropFirst() { try plant(path) }
        let directory = device.directory.keybagPath + ".tmp-\(dead + 1)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: false)

        _ = try device.boot()
        for path in stale { XCTAssertFalse(exists(path), "\(path) is removed") }
        for path in kept { XCTAssertTrue(exists(path), "\(path) stays") }
        XCTAssertTrue(exists(directory), "a directory by that name stays")
    }

    /// Forgetting a device (`forget`, or an init or restore removing a build a kill
    /// left) takes its record's temporary too: left in the store by a kill between the
    /// write and its rename, it would otherwise stay for ever.
    func testDiscardRemovesTheRecordTemporaryAKillLeft() throws {
        let device = try TestDevice()
        let uuid = try device.boot().deviceUUID
        let dead = try deadPID()
        let store = SecretStoreLocation.file(directory: device.secretStore)
        let temporary = DeviceRecordStore.statePath(of: uuid, in: device.secretStore) + ".tmp-\(dead)"
        let another = device.secretStore + "/another-device.state.tmp-\(dead)"
        try plant(temporary)
        try plant(another)

        DeviceProvisioning.discard(uuid, in: store)
        XCTAssertEqual(DeviceProvisioning.entries(of: uuid, in: store), [])
        XCTAssertFalse(exists(temporary), "the forgotten device's temporary is removed")
        XCTAssertTrue(exists(another), "another device's stays")
    }
}
