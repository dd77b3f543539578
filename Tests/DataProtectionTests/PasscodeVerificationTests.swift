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

    /// An empty passcode is never a device's passcode (none can be set): it is refused
    /// before it is tried, and counts as no failed attempt, wherever a passcode goes.
    func testAnEmptyPasscodeIsRefusedUncounted() throws {
        let device = try TestDevice()
        let manager = try device.boot()
        let attempts: [(String, () throws -> Void)] = [
            ("unlock", { try manager.unlock(passcode: TestDevice.secret("")) }),
            ("a prompt's check", { try manager.verifyPasscode(TestDevice.secret("")) }),
            ("a change's current passcode", {
                try manager.changePasscode(current: TestDevice.secret(""), new: TestDevice.secret("5678"))
            }),
            ("a change's new passcode", {
                try manager.changePasscode(current: TestDevice.secret("1234"), new: TestDevice.secret(""))
            }),
        ]
        for (what, attempt) in attempts {
            XCTAssertThrowsError(try attempt(), what) { error in
                XCTAssertEqual(error as? LockError, .emptyPasscode, what)
            }
            XCTAssertEqual(manager.status().failedAttempts, 0, "\(what) counted a failed attempt")
        }
        XCTAssertEqual(manager.status().state, .beforeFirstUnlock)
        try manager.unlock(passcode: TestDevice.secret("1234"))
    }
}
