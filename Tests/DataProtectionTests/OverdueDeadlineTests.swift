// A deadline of the lock (the grace period's end, the user-inactive expiry, the
// inactivity reboot) holds whether or not a timer ran for it: a daemon that cannot get
// a thread (its user at RLIMIT_NPROC) must not keep class keys past their time. The
// device's clock is moved here without running anything that is due, as a timer that
// never fired would leave it; every check that follows must find the keys gone.
@testable import DataProtection
import Foundation
import Synchronization
import XCTest

final class OverdueDeadlineTests: XCTestCase {
    func testKeysAreGoneAfterTheGracePeriodThoughNoTimerRan() throws {
        let device = try TestDevice()
        let manager = try device.boot(gracePeriod: 60)
        try manager.unlock(passcode: TestDevice.secret("1234"))
        let revoked = Mutex<[Set<ProtectionClass>]>([])
        manager.addRevoker { classes, _ in revoked.withLock { $0.append(classes) } }
        XCTAssertTrue(manager.lock())
        XCTAssertTrue(manager.isAvailable(.complete), "still available during the grace period")
        manager.clock.advance(by: 61)
        XCTAssertFalse(manager.isAvailable(.complete), "gone once the grace period is over")
        XCTAssertFalse(manager.isAvailable(.completeUnlessOpen))
        XCTAssertNil(manager.withClassKey(.complete) { _ in true }, "no key to use either")
        XCTAssertTrue(manager.isAvailable(.untilFirstAuth))
        XCTAssertEqual(manager.phase, .locked)
        let status = manager.status()
        XCTAssertEqual(status.state, .locked, "status completes the lock")
        XCTAssertEqual(status.classes["complete"], false)
        XCTAssertEqual(revoked.withLock { $0 }, [[.complete, .completeUnlessOpen]], "open files revoked once")
    }

    func testAKeyIsWipedAtTheCheckNotOnlyReportedGone() throws {
        let device = try TestDevice()
        let manager = try device.boot(gracePeriod: 60)
        try manager.unlock(passcode: TestDevice.secret("1234"))
        XCTAssertTrue(manager.lock())
        manager.clock.advance(by: 61)
        XCTAssertFalse(manager.isAvailable(.complete))
        XCTAssertFalse(manager.heldClasses.contains(.complete), "the key left memory at the check")
        XCTAssertTrue(manager.heldClasses.contains(.untilFirstAuth))
    }

    func testTheUserInactiveExpiryHoldsThoughNoTimerRan() throws {
        let device = try TestDevice()
        let manager = try LockStateManager(directory: device.directory, gracePeriod: 0, userInactivePeriod: 7200)
        try manager.unlock(passcode: TestDevice.secret("1234"))
        XCTAssertTrue(manager.lock(now: true))
        manager.clock.advance(by: 7100)
        XCTAssertTrue(manager.isAvailable(.completeWhenUserInactive))
        manager.clock.advance(by: 100)
        XCTAssertFalse(manager.isAvailable(.completeWhenUserInactive), "gone after the period")
        XCTAssertNil(manager.withClassKey(.completeWhenUserInactive) { _ in true })
        XCTAssertTrue(manager.isAvailable(.untilFirstAuth))
        XCTAssertEqual(manager.status().classes["completeWhenUserInactive"], false)
        try manager.unlock(passcode: TestDevice.secret("1234"))
        XCTAssertTrue(manager.isAvailable(.completeWhenUserInactive), "back at the unlock")
    }

    func testTheInactivityRebootHoldsThoughNoTimerRan() throws {
        let device = try TestDevice()
        let manager = try LockStateManager(directory: device.directory, gracePeriod: 10, inactivityReboot: 3 * 3600)
        try manager.unlock(passcode: TestDevice.secret("1234"))
        XCTAssertTrue(manager.lock())
        manager.clock.advance(by: 3 * 3600 + 11)
        XCTAssertFalse(manager.isAvailable(.untilFirstAuth), "the reboot took untilFirstAuth")
        XCTAssertFalse(manager.isAvailable(.complete))
        XCTAssertTrue(manager.isAvailable(.none))
        XCTAssertEqual(manager.phase, .beforeFirstUnlock)
        XCTAssertEqual(manager.status().state, .beforeFirstUnlock)
    }

    func testAnUnlockInTheGracePeriodStillCancelsTheWipe() throws {
        let device = try TestDevice()
        let manager = try device.boot(gracePeriod: 60)
        try manager.unlock(passcode: TestDevice.secret("1234"))
        XCTAssertTrue(manager.lock())
        manager.clock.advance(by: 30)
        try manager.unlock(passcode: TestDevice.secret("1234"))
        manager.clock.advance(by: 60)
        XCTAssertTrue(manager.isAvailable(.complete))
        XCTAssertEqual(manager.status().state, .unlocked)
    }

    func testTheDeadlineThreadWipesAndRevokesWithoutAnyCheck() throws {
        let device = try TestDevice()
        let manager = try device.boot(gracePeriod: 0.2)
        try manager.startDeadlineThread()
        try manager.unlock(passcode: TestDevice.secret("1234"))
        let revoked = Mutex<[Set<ProtectionClass>]>([])
        manager.addRevoker { classes, _ in revoked.withLock { $0.append(classes) } }
        XCTAssertTrue(manager.lock())
        let deadline = Date().addingTimeInterval(30)
        while revoked.withLock({ $0.isEmpty }) && Date() < deadline { Thread.sleep(forTimeInterval: 0.01) }
        XCTAssertEqual(revoked.withLock { $0 }, [[.complete, .completeUnlessOpen]], "revoked by the thread")
        XCTAssertFalse(manager.heldClasses.contains(.complete))
    }
}
