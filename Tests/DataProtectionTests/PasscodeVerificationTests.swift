// A passcode checked for a prompt (verifyPasscode) counts as an unlock's attempt does,
// but leaves the device in the state it was in.
import DataProtection
import XCTest

final class PasscodeVerificationTests: XCTestCase {
    func testTheRightPasscodeLeavesALockedDeviceLocked() throws {
        let device = try TestDevice()
        let manager = try device.boot()
        try manager.unlock(passcode: TestDevice.secret("1234"))
        XCTAssertTrue(manager.lock(now: true))
        try manager.verifyPasscode(TestDevice.secret("1234"))
        XCTAssertEqual(manager.status().state, .locked)
        XCTAssertFalse(manager.isAvailable(.complete))
    }

    func testTheRightPasscodeDoesNotMakeTheFirstUnlock() throws {
        let device = try TestDevice()
        let manager = try device.boot()
        try manager.verifyPasscode(TestDevice.secret("1234"))
        XCTAssertEqual(manager.status().state, .beforeFirstUnlock)
        XCTAssertFalse(manager.isAvailable(.untilFirstAuth))
    }

    func testAWrongPasscodeCountsAndTheRightOneClearsTheCount() throws {
        let device = try TestDevice()
        let manager = try device.boot()
        XCTAssertThrowsError(try manager.verifyPasscode(TestDevice.secret("0000"))) {
            guard case .wrongPasscode(failedAttempts: 1, _) = $0 as? LockError else { return XCTFail("\($0)") }
        }
        XCTAssertEqual(manager.status().failedAttempts, 1)
        try manager.verifyPasscode(TestDevice.secret("1234"))
        XCTAssertEqual(manager.status().failedAttempts, 0)
        XCTAssertEqual(try XCTUnwrap(try manager.deviceRecord()).failedAttempts, 0)
    }
}
