// The device's record in the secret store refuses old copies of the keybag and the
// item store, and keeps the failure count and an erase (dpfs(5)).
import DataProtection
import Foundation
import XCTest

final class RollbackTests: XCTestCase {
    private func keybagBytes(_ device: TestDevice) throws -> Data {
        try Data(contentsOf: URL(fileURLWithPath: device.directory.keybagPath))
    }

    private func putBack(_ bytes: Data, _ device: TestDevice) throws {
        try bytes.write(to: URL(fileURLWithPath: device.directory.keybagPath))
    }

    private func assertRefusedAsOld(_ device: TestDevice, file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertThrowsError(try device.boot(), file: file, line: line) { error in
            guard case .rolledBack(let what, _, let found, let recorded) = error as? DeviceRecordError else {
                return XCTFail("\(error)", file: file, line: line)
            }
            XCTAssertEqual(what, "keybag", file: file, line: line)
            XCTAssertLessThan(found, recorded, file: file, line: line)
            XCTAssertTrue("\(error)".contains("an old copy was put back"), "\(error)", file: file, line: line)
            XCTAssertTrue("\(error)".contains("file:\(device.secretStore)"), "\(error)", file: file, line: line)
        }
    }

    private func record(_ device: TestDevice) throws -> DeviceRecord {
        let manager = try device.boot()
        return try XCTUnwrap(try manager.deviceRecord())
    }

    func testTheRecordFollowsEverySave() throws {
        let device = try TestDevice()
        let manager = try device.boot()
        let before = try XCTUnwrap(try manager.deviceRecord())
        _ = try? manager.unlock(passcode: TestDevice.secret("0000"))
        let after = try XCTUnwrap(try manager.deviceRecord())
        XCTAssertGreaterThan(after.keybagGeneration, before.keybagGeneration)
        XCTAssertEqual(after.failedAttempts, 1)
        var info = stat()
        let path = DeviceRecordStore.statePath(of: manager.deviceUUID, in: device.secretStore)
        XCTAssertEqual(stat(path, &info), 0)
        XCTAssertEqual(info.st_mode & 0o777, 0o600)
    }

    func testAnOlderKeybagAfterFailuresIsRefused() throws {
        let device = try TestDevice()
        let old = try keybagBytes(device)
        let manager = try device.boot()
        for guess in ["1", "2", "3", "4", "5"] { _ = try? manager.unlock(passcode: TestDevice.secret(guess)) }
        XCTAssertEqual(manager.status().failedAttempts, 5)
        try putBack(old, device)
        assertRefusedAsOld(device)
    }

    func testTheKeybagOfTheSaveBeforeIsRefusedToo() throws {
        // The keybag from just before a passcode change: the settled save makes it two
        // generations old, so it cannot bring the old passcode back.
        let device = try TestDevice()
        let old = try keybagBytes(device)
        try device.boot().changePasscode(current: TestDevice.secret("1234"), new: TestDevice.secret("5678"))
        try putBack(old, device)
        assertRefusedAsOld(device)
    }

    func testAnUndoneEraseIsRefused() throws {
        let device = try TestDevice(eraseAfter: 2)
        let old = try keybagBytes(device)
        let manager = try device.boot()
        _ = try? manager.unlock(passcode: TestDevice.secret("1"))
        XCTAssertThrowsError(try manager.unlock(passcode: TestDevice.secret("2"))) {
            XCTAssertEqual($0 as? LockError, .erased)
        }
        XCTAssertTrue(try record(device).erased)
        try putBack(old, device)
        assertRefusedAsOld(device)
    }

    /// A crash between the record's write and the keybag's: the keybag is one behind,
    /// and the record's count (and its wait) wins.
    func testAKeybagOneBehindTakesTheRecordedCount() throws {
        let device = try TestDevice()
        let manager = try device.boot()
        for guess in ["1", "2", "3", "4"] { _ = try? manager.unlock(passcode: TestDevice.secret(guess)) }
        try DeviceRecordStore.update(for: manager.deviceUUID, in: manager.secretStore) { record in
            record.keybagGeneration += 1
            record.failedAttempts = 5
        }
        let booted = try device.boot(delayScale: 1)
        XCTAssertEqual(booted.status().failedAttempts, 5)
        XCTAssertGreaterThan(booted.status().retryAfter ?? 0, 55, "the fifth failure's minute")
        XCTAssertThrowsError(try booted.unlock(passcode: TestDevice.secret("1234"))) {
            guard case .mustWait = $0 as? LockError else { return XCTFail("\($0)") }
        }
        XCTAssertEqual(try record(device).failedAttempts, 5)
    }

    func testAnEraseTheKeybagMissedIsCompleted() throws {
        let device = try TestDevice(eraseAfter: 10)
        let manager = try device.boot()
        try DeviceRecordStore.update(for: manager.deviceUUID, in: manager.secretStore) { record in
            record.keybagGeneration += 1
            record.failedAttempts = 10
            record.erased = true
        }
        let booted = try device.boot()
        XCTAssertTrue(booted.status().erased)
        XCTAssertFalse(booted.status().passcodeSet)
        XCTAssertNotNil(booted.bootNotice)
    }

    func testAMissingRecordIsStartedFromTheKeybag() throws {
        let device = try TestDevice()
        let uuid = try device.boot().deviceUUID
        try FileManager.default.removeItem(atPath: DeviceRecordStore.statePath(of: uuid, in: device.secretStore))
        let booted = try device.boot()
        XCTAssertNotNil(booted.bootNotice)
        XCTAssertNotNil(try booted.deviceRecord())
        XCTAssertNil(try device.boot().bootNotice)
    }

    func testTheKeychainStateIsTheRecordedOneOrTheOneBefore() throws {
        let device = try TestDevice()
        let manager = try device.boot()
        let first = KeychainState(generation: 3, digest: "aa")
        let second = KeychainState(generation: 4, digest: "bb")
        XCTAssertNoThrow(try manager.checkKeychainState(first), "a record without a digest takes the first state")
        try manager.recordKeychainState(second, replacing: first)
        XCTAssertNoThrow(try manager.checkKeychainState(first), "the state before: a crash before the commit")
        XCTAssertEqual(try manager.deviceRecord()?.keychainState, first, "the record is brought back to it")
        XCTAssertNil(try manager.deviceRecord()?.keychainPrevious)
        XCTAssertThrowsError(try manager.checkKeychainState(second), "once brought back, the uncommitted state is gone")

        try manager.recordKeychainState(second, replacing: first)
        XCTAssertNoThrow(try manager.checkKeychainState(second), "the write committed")
        XCTAssertThrowsError(try manager.checkKeychainState(first), "then the state before it is refused")
        let third = KeychainState(generation: 5, digest: "ee")
        try manager.recordKeychainState(third, replacing: second)
        try manager.settleKeychainRecord(at: second)
        XCTAssertEqual(try manager.deviceRecord()?.keychainPrevious, second,
                       "a write between its record and its commit keeps the state before it")
        try manager.settleKeychainRecord(at: third)
        XCTAssertThrowsError(try manager.checkKeychainState(second), "and after the daemon's end too")
        try manager.recordKeychainState(first, replacing: first)
        XCTAssertThrowsError(try manager.checkKeychainState(KeychainState(generation: 2, digest: "cc"))) {
            XCTAssertEqual("\($0)", "the keychain is older than the device's record in secret store "
                           + "file:\(device.secretStore) (generation 2 < 3): an old copy was put back")
        }
        XCTAssertThrowsError(try manager.checkKeychainState(KeychainState(generation: 3, digest: "dd"))) {
            XCTAssertEqual($0 as? DeviceRecordError,
                           .keychainAltered(store: "file:\(device.secretStore)", found: 3, recorded: 3),
                           "the recorded generation with other rows")
        }
        XCTAssertThrowsError(try manager.checkKeychainState(KeychainState(generation: 9, digest: "aa")),
                             "a counter raised past the record")
    }

    /// A full disk, played by a directory where the keybag's temporary file goes: each
    /// keybag write fails after its record's.
    func testFailedSavesLeaveTheDeviceMountableAndTheFailureCounted() throws {
        let device = try TestDevice()
        let manager = try device.boot()
        let blocker = device.directory.keybagPath + ".tmp-\(getpid())"
        try FileManager.default.createDirectory(atPath: blocker, withIntermediateDirectories: false)
        defer { try? FileManager.default.removeItem(atPath: blocker) }

        XCTAssertThrowsError(try manager.unlock(passcode: TestDevice.secret("0000"))) {
            XCTAssertEqual($0 as? LockError, .wrongPasscode(failedAttempts: 1, wait: nil))
        }
        XCTAssertEqual(manager.status().failedAttempts, 1, "counted though unsaved")
        XCTAssertThrowsError(try manager.unlock(passcode: TestDevice.secret("1234")), "no passcode is tried") {
            guard case .failureNotSaved = $0 as? LockError else { return XCTFail("\($0)") }
        }
        XCTAssertEqual(manager.phase, .beforeFirstUnlock)
        XCTAssertThrowsError(try manager.recordDirectoryClass([1, 2, 3], .complete), "another save fails")

        try FileManager.default.removeItem(atPath: blocker)
        let rebooted = try device.boot()
        XCTAssertEqual(rebooted.status().failedAttempts, 1, "the record kept the count for the next boot")
        XCTAssertNoThrow(try manager.unlock(passcode: TestDevice.secret("1234")))
        XCTAssertEqual(manager.status().failedAttempts, 0)
    }
}
