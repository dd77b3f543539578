// A lock asked for while an unlock checks the passcode (a suspend a moment after the
// login, a `dpfs lock` while the TPM takes its time) is the later event: the device
// stays locked, and the unlock says so; the next unlock opens it.
import DPFSProtocol
import DataProtection
import Synchronization
import XCTest

final class LockDuringUnlockTests: XCTestCase {
    func testALockWhileThePasscodeIsCheckedWins() throws {
        let device = try TestDevice()
        let booted = Mutex<LockStateManager?>(nil)
        let armed = Mutex(true)
        let hooks = TestHooks(delayScale: 0, passcodeChecked: {
            guard armed.withLock({ $0 }) else { return }
            armed.withLock { $0 = false }
            booted.withLock { $0 }?.lock(now: true)
        })
        let manager = try LockStateManager(directory: device.directory, gracePeriod: 0, testHooks: hooks)
        booted.withLock { $0 = manager }
        let passcode = try XCTUnwrap(device.passcode)
        XCTAssertThrowsError(try manager.unlock(passcode: passcode)) { error in
            XCTAssertEqual(error as? LockError, .lockedMeanwhile)
        }
        XCTAssertFalse(manager.isAvailable(.complete), "the keys stay where the lock left them")
        XCTAssertFalse(manager.isAvailable(.untilFirstAuth))
        XCTAssertEqual(manager.status().failedAttempts, 0, "the passcode was right: no failure counted")
        try manager.unlock(passcode: passcode)
        XCTAssertTrue(manager.isAvailable(.complete))
        booted.withLock { $0 = nil }
    }
}
