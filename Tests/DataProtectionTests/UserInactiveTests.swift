// completeWhenUserInactive: kept at the lock, wiped once the device has stayed locked
// for the user-inactive period on its clock, back at the next unlock; its key the same
// across a reboot.
import DataProtection
import Synchronization
import XCTest

final class UserInactiveTests: XCTestCase {
    func testTheClassExpiresAfterThePeriodLockedAndComesBackAtUnlock() throws {
        let device = try TestDevice()
        let manager = try device.boot()
        XCTAssertFalse(manager.isAvailable(.completeWhenUserInactive), "not before the first unlock")
        try manager.unlock(passcode: TestDevice.secret("1234"))
        let revoked = Mutex<[Set<ProtectionClass>]>([])
        manager.addRevoker { classes, _ in revoked.withLock { $0.append(classes) } }
        XCTAssertTrue(manager.lock(now: true))
        XCTAssertTrue(manager.isAvailable(.completeWhenUserInactive), "kept at the lock")
        manager.advanceClock(by: LockStateManager.defaultUserInactivePeriod - 3600)
        XCTAssertTrue(manager.isAvailable(.completeWhenUserInactive))
        manager.advanceClock(by: 3600)
        XCTAssertFalse(manager.isAvailable(.completeWhenUserInactive), "gone after the period")
        XCTAssertTrue(manager.isAvailable(.untilFirstAuth))
        XCTAssertEqual(manager.phase, .locked)
        XCTAssertEqual(revoked.withLock { $0 }, [[.complete, .completeUnlessOpen], [.completeWhenUserInactive]])
        XCTAssertEqual(manager.status().classes["completeWhenUserInactive"], false)
        XCTAssertEqual(manager.status().userInactivePeriodHours, 24)
        try manager.unlock(passcode: TestDevice.secret("1234"))
        XCTAssertTrue(manager.isAvailable(.completeWhenUserInactive), "back at the unlock")
    }

    func testAnUnlockStartsThePeriodAgain() throws {
        let device = try TestDevice()
        let manager = try LockStateManager(directory: device.directory, gracePeriod: 0, userInactivePeriod: 7200)
        try manager.unlock(passcode: TestDevice.secret("1234"))
        manager.lock(now: true)
        manager.advanceClock(by: 5400)
        try manager.unlock(passcode: TestDevice.secret("1234"))
        manager.lock(now: true)
        manager.advanceClock(by: 5400)
        XCTAssertTrue(manager.isAvailable(.completeWhenUserInactive), "90 min locked of the second lock only")
        manager.advanceClock(by: 1800)
        XCTAssertFalse(manager.isAvailable(.completeWhenUserInactive))
    }

    func testTheClassKeyIsTheSameAfterAReboot() throws {
        let device = try TestDevice()
        XCTAssertNotNil(try storedKeybag(device.directory).wrappedKeys["completeWhenUserInactive"], "made by init")
        let manager = try device.boot()
        try manager.unlock(passcode: TestDevice.secret("1234"))
        XCTAssertTrue(manager.isAvailable(.completeWhenUserInactive))
        let fileID = [UInt8](repeating: 7, count: 16)
        let fileKey = SecureBuffer.random(count: FileKeyWrap.fileKeySize)
        let wrapped = try XCTUnwrap(FileKeyWrap.wrap(fileKey, fileID: fileID, as: .completeWhenUserInactive, device: manager))
        let rebooted = try device.boot()
        try rebooted.unlock(passcode: TestDevice.secret("1234"))
        let unwrapped = try FileKeyWrap.unwrap(wrapped, fileID: fileID, as: .completeWhenUserInactive, device: rebooted)
        XCTAssertEqual(Array(unwrapped.bytes), Array(fileKey.bytes), "the same key after a reboot")
        XCTAssertThrowsError(try rebooted.unlock(passcode: TestDevice.secret("0000")), "a wrong passcode is still wrong")
    }

    func testADeviceWithoutPasscodeHasTheClassFromBoot() throws {
        let device = try TestDevice(passcode: nil)
        let manager = try device.boot()
        XCTAssertTrue(manager.isAvailable(.completeWhenUserInactive))
        manager.lock(now: true)
        manager.advanceClock(by: 30 * 24 * 3600)
        XCTAssertTrue(manager.isAvailable(.completeWhenUserInactive), "a device without a passcode never locks")
    }

    private func storedKeybag(_ directory: DeviceDirectory) throws -> KeybagFile {
        let secret = try KeybagFile.loadDeviceSecret(of: directory)
        defer { secret.wipe() }
        return try KeybagFile.load(from: directory, deviceSecret: secret)
    }
}
