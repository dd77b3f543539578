// DeviceControl's biometry answers against a real mount: they stay queued in the daemon
// after the call that queued them, until cleared or a restart.
import DataProtectionKit
import Foundation
import XCTest

final class BiometryControlTests: MountedDeviceTestCase {
    override func setUpWithError() throws {
        try super.setUpWithError()
        try device.control.unlock(passcodeFile: device.passcodeFile)
        try device.control.enrollBiometry(.faceID)
    }

    func testClearingDropsEveryQueuedAnswer() throws {
        try device.control.respondToBiometry(.nomatch, times: 3)
        try device.control.respondWithPasscode(DevicePasscode(file: device.passcodeFile))
        XCTAssertEqual(try device.control.biometry.queuedAnswers, 4)
        try device.control.clearBiometryResponses()
        XCTAssertEqual(try device.control.biometry.queuedAnswers, 0)
        XCTAssertEqual(try device.control.biometry.failedMatches, 0, "no cleared answer was taken")
    }

    func testARestartDropsTheQueuedAnswers() throws {
        try device.control.respondToBiometry(.cancel, times: 2)
        try device.control.restart()
        XCTAssertEqual(try device.control.biometry.queuedAnswers, 0)
    }
}
