// ProtectedData.isAvailable and the protected-data notifications against a real mount.
import DataProtectionKit
import Foundation
import XCTest

final class ProtectedDataTests: MountedDeviceTestCase {
    func testIsAvailableFollowsTheLockState() throws {
        XCTAssertFalse(ProtectedData.isAvailable, "beforeFirstUnlock after mount")
        try device.control.unlock(passcodeFile: device.passcodeFile)
        XCTAssertTrue(ProtectedData.isAvailable)
        XCTAssertTrue(UIApplication.shared.isProtectedDataAvailable)
        try device.control.lock()
        XCTAssertTrue(ProtectedData.isAvailable, "still available during the grace period")
        try device.control.lock(now: true)
        XCTAssertFalse(ProtectedData.isAvailable)
        XCTAssertFalse(try ProtectedData.availability())
    }

    func testThreeLockedDaysRestartTheDeviceInAMoment() throws {
        try device.control.unlock(passcodeFile: device.passcodeFile)
        try device.control.lock(now: true)
        try device.control.advanceClock(by: 71 * 3600)
        XCTAssertEqual(try device.control.state, .locked, "71 hours locked: not yet")
        try device.control.advanceClock(by: 3600)
        XCTAssertEqual(try device.control.state, .beforeFirstUnlock, "72 hours locked: iOS 18 restarts")
        XCTAssertFalse(ProtectedData.isAvailable)
    }

    func testNotificationsArriveOnTheDefaultCenter() throws {
        try device.control.unlock(passcodeFile: device.passcodeFile)
        try ProtectedData.startObserving()
        XCTAssertTrue(ProtectedData.isObserving)

        let willGo = expectation(forNotification: UIApplication.protectedDataWillBecomeUnavailableNotification,
                                 object: nil) { note in
            note.userInfo?[ProtectedDataNotificationKey.event] as? String == "willBecomeUnavailable"
        }
        try device.control.lock()
        wait(for: [willGo], timeout: 5)

        let didCome = expectation(forNotification: UIApplication.protectedDataDidBecomeAvailableNotification, object: nil)
        try device.control.unlock(passcodeFile: device.passcodeFile)
        wait(for: [didCome], timeout: 5)

        let restarted = expectation(forNotification: .UIApplicationProtectedDataWillBecomeUnavailable, object: nil) { note in
            note.userInfo?[ProtectedDataNotificationKey.event] as? String == "restart"
        }
        try device.control.restart()
        wait(for: [restarted], timeout: 5)

        ProtectedData.stopObserving()
        XCTAssertFalse(ProtectedData.isObserving)
    }

    func testNotificationNamesAreApples() {
        XCTAssertEqual(UIApplication.protectedDataWillBecomeUnavailableNotification.rawValue,
                       "UIApplicationProtectedDataWillBecomeUnavailable")
        XCTAssertEqual(UIApplication.protectedDataDidBecomeAvailableNotification.rawValue,
                       "UIApplicationProtectedDataDidBecomeAvailable")
    }
}
