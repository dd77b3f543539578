// Copies of one device directory share its record in the secret store: while one is
// in use, the lock keyed by the device's UUID refuses every other, naming the first.
import DataProtection
import Foundation
import Glibc
import XCTest

final class DeviceUseLockTests: XCTestCase {
    private var copies: [String] = []
    private var held: [Int32] = []

    override func tearDown() {
        for fd in held { close(fd) }
        held = []
        for copy in copies { try? FileManager.default.removeItem(atPath: copy) }
        copies = []
    }

    private func copy(of device: TestDevice) throws -> DeviceDirectory {
        let copy = device.directory.root + "-copy"
        try FileManager.default.copyItem(atPath: device.directory.root, toPath: copy)
        copies.append(copy)
        return DeviceDirectory(copy)
    }

    private func take(_ directory: DeviceDirectory) throws -> Int32 {
        let fd = try XCTUnwrap(try DeviceUseLock.take(for: directory), "a file store always has the lock")
        held.append(fd)
        return fd
    }

    func testACopyIsRefusedWhileTheOriginalIsInUseNamingTheOriginal() throws {
        let device = try TestDevice()
        let copy = try copy(of: device)
        _ = try take(device.directory)
        XCTAssertThrowsError(try DeviceUseLock.take(for: copy)) {
            guard case .copyInUse(_, let holder, _) = $0 as? DeviceError else { return XCTFail("\($0)") }
            XCTAssertEqual(holder, device.directory.root)
            XCTAssertTrue("\($0)".hasSuffix("a copy of a device directory cannot be mounted beside it"), "\($0)")
        }
    }

    func testTheCopyIsTakenOnceTheOriginalLetsGo() throws {
        let device = try TestDevice()
        let copy = try copy(of: device)
        let original = try take(device.directory)
        close(original)
        held.removeAll { $0 == original }
        _ = try take(copy)
        XCTAssertThrowsError(try DeviceUseLock.take(for: device.directory), "and then the original is the copy refused")
    }

    func testAnotherDeviceIsNotRefused() throws {
        let first = try TestDevice()
        let second = try TestDevice()
        _ = try take(first.directory)
        _ = try take(second.directory)
    }
}

// A refusal that comes while the holder has taken the lock but not yet written its
// path, over the path of a holder gone before it, still names the holder.
final class DeviceUseLockTakingTests: XCTestCase {
    func testARefusalDuringTheHoldersTakingNamesTheHolder() throws {
        let device = try TestDevice()
        let copyRoot = device.directory.root + "-copy"
        try FileManager.default.copyItem(atPath: device.directory.root, toPath: copyRoot)
        defer { try? FileManager.default.removeItem(atPath: copyRoot) }
        let entry = try KeybagFile.storeEntry(of: device.directory)
        guard case .file(let store) = entry.store else { return XCTFail("a test device's store is a file store") }

        // The holder, half way: the record's lock and the use lock taken, a gone
        // holder's path still in the file.
        let recordLock = open(store + "/" + entry.deviceUUID + ".lock", O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        let useLock = open(store + "/" + entry.deviceUUID + ".inuse", O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        defer { close(recordLock); close(useLock) }
        XCTAssertEqual(flock(recordLock, LOCK_EX), 0)
        XCTAssertEqual(flock(useLock, LOCK_EX), 0)
        let gone = Array("/gone/before\n".utf8)
        _ = gone.withUnsafeBytes { pwrite(useLock, $0.baseAddress, $0.count, 0) }

        let refusal = RefusalBox()
        let refuser = Thread {
            do { _ = try DeviceUseLock.take(for: DeviceDirectory(copyRoot)) } catch { refusal.set(error) }
            refusal.finish()
        }
        refuser.start()
        // Until the refuser has answered, or waits for the record's lock (/proc/locks
        // shows a waiter as "->").
        var info = stat()
        XCTAssertEqual(fstat(recordLock, &info), 0)
        let deadline = Date().addingTimeInterval(60)
        while !refusal.finished, !Self.waiterShown(onInode: info.st_ino), Date() < deadline { usleep(10_000) }

        let line = Array((device.directory.root + "\n").utf8)
        _ = ftruncate(useLock, 0)
        _ = line.withUnsafeBytes { pwrite(useLock, $0.baseAddress, $0.count, 0) }
        _ = flock(recordLock, LOCK_UN)
        while !refusal.finished, Date() < deadline { usleep(10_000) }

        XCTAssertTrue(refusal.finished, "the refuser answered")
        guard case .copyInUse(_, let holder, _)? = refusal.error as? DeviceError else {
            return XCTFail("not refused as a copy in use: \(String(describing: refusal.error))")
        }
        XCTAssertEqual(holder, device.directory.root)
    }

    private static func waiterShown(onInode inode: ino_t) -> Bool {
        guard let locks = try? String(contentsOfFile: "/proc/locks", encoding: .utf8) else { return false }
        return locks.split(separator: "\n").contains { $0.contains("->") && $0.contains(":\(inode) ") }
    }
}

private final class RefusalBox: @unchecked Sendable {
    private let lock = NSLock()
    private var caught: (any Error)?
    private var done = false

    var error: (any Error)? { lock.withLock { caught } }
    var finished: Bool { lock.withLock { done } }
    func set(_ error: any Error) { lock.withLock { caught = error } }
    func finish() { lock.withLock { done = true } }
}
