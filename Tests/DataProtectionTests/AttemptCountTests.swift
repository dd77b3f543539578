// Passcode attempts made at once through copies of the device directory: each copy
// shares the device's record, which counts every attempt before it is tried, so the
// delays and the erase fall on them as on attempts made one by one.
import DataProtection
import Foundation
import Synchronization
import XCTest

final class AttemptCountTests: XCTestCase {
    private var copies: [String] = []

    override func tearDown() {
        for copy in copies { try? FileManager.default.removeItem(atPath: copy) }
        copies = []
    }

    /// `count` copies of the device's directory, each booted as its own device.
    private func bootCopies(_ device: TestDevice, _ count: Int, delayScale: Double) throws -> [LockStateManager] {
        try (0..<count).map { index in
            let copy = device.directory.root + "-copy\(index)"
            try FileManager.default.copyItem(atPath: device.directory.root, toPath: copy)
            copies.append(copy)
            return try LockStateManager(directory: DeviceDirectory(copy), gracePeriod: 0,
                                        testHooks: TestHooks(delayScale: delayScale))
        }
    }

    /// A distinct wrong passcode through each manager, all at once.
    private func guessAtOnce(_ managers: [LockStateManager]) -> [LockError] {
        let outcomes = Mutex<[LockError]>([])
        DispatchQueue.concurrentPerform(iterations: managers.count) { index in
            do {
                try managers[index].unlock(passcode: TestDevice.secret("9\(index)00"))
                XCTFail("a wrong passcode unlocked")
            } catch {
                outcomes.withLock { $0.append(error as? LockError ?? .noPasscode) }
            }
        }
        return outcomes.withLock { $0 }
    }

    func testAttemptsAtOnceThroughCopiesAreEachCountedAndDelayed() throws {
        let device = try TestDevice()
        let managers = try bootCopies(device, 8, delayScale: 1)
        let outcomes = guessAtOnce(managers)
        let tried = outcomes.filter { if case .wrongPasscode = $0 { return true } else { return false } }
        let delayed = outcomes.filter { if case .mustWait = $0 { return true } else { return false } }
        XCTAssertEqual(tried.count, 5, "attempts 1-4 have no delay; the fifth imposes one: \(outcomes)")
        XCTAssertEqual(delayed.count, 3, "\(outcomes)")
        let record = try XCTUnwrap(try managers[0].deviceRecord())
        XCTAssertEqual(record.failedAttempts, 5)
        XCTAssertThrowsError(try managers[0].unlock(passcode: TestDevice.secret("1234")), "the right one waits too") {
            guard case .mustWait = $0 as? LockError else { return XCTFail("\($0)") }
        }
    }

    func testAttemptsAtOnceThroughCopiesReachTheErase() throws {
        let device = try TestDevice(eraseAfter: 4)
        let managers = try bootCopies(device, 10, delayScale: 0)
        let outcomes = guessAtOnce(managers)
        XCTAssertEqual(outcomes.filter { $0 == .erased }.count, 7, "the fourth attempt erases; none after it is tried: \(outcomes)")
        XCTAssertTrue(try XCTUnwrap(try managers[0].deviceRecord()).erased)
        for manager in managers {
            XCTAssertThrowsError(try manager.unlock(passcode: TestDevice.secret("1234")), "no copy opens after the erase")
        }
    }

    func testAnAttemptCountedAtTheLimitWhoseProcessDiedErasesAtBoot() throws {
        let device = try TestDevice(eraseAfter: 3)
        let manager = try device.boot()
        // As a process killed between counting the third attempt and trying it leaves it.
        try DeviceRecordStore.update(for: manager.deviceUUID, in: manager.secretStore) { $0.failedAttempts = 3 }
        XCTAssertThrowsError(try manager.unlock(passcode: TestDevice.secret("1234")), "no attempt past the limit") {
            XCTAssertEqual($0 as? LockError, .erased)
        }
        let rebooted = try device.boot()
        XCTAssertTrue(rebooted.status().erased)
        XCTAssertThrowsError(try rebooted.unlock(passcode: TestDevice.secret("1234")))
    }

    func testTheRightPasscodeClearsTheCountOfOneAttempt() throws {
        let device = try TestDevice()
        let manager = try device.boot()
        XCTAssertThrowsError(try manager.unlock(passcode: TestDevice.secret("0000")))
        XCTAssertNoThrow(try manager.unlock(passcode: TestDevice.secret("1234")))
        XCTAssertEqual(try XCTUnwrap(try manager.deviceRecord()).failedAttempts, 0)
        XCTAssertEqual(manager.status().failedAttempts, 0)
        XCTAssertEqual(try device.boot().status().failedAttempts, 0)
    }

    func testTheRightPasscodeThroughAnotherCopyClearsItsAdoptedCount() throws {
        let device = try TestDevice()
        let managers = try bootCopies(device, 2, delayScale: 0)
        for guess in ["1", "2"] { XCTAssertThrowsError(try managers[0].unlock(passcode: TestDevice.secret(guess))) }
        XCTAssertNoThrow(try managers[1].unlock(passcode: TestDevice.secret("1234")))
        XCTAssertEqual(managers[1].status().failedAttempts, 0, "the count it took from the record is cleared")
        XCTAssertEqual(try XCTUnwrap(try managers[1].deviceRecord()).failedAttempts, 0)
    }

    func testARepeatedWrongPasscodeCountsOnce() throws {
        let device = try TestDevice()
        let manager = try device.boot()
        for _ in 0..<3 { XCTAssertThrowsError(try manager.unlock(passcode: TestDevice.secret("0000"))) }
        XCTAssertEqual(try XCTUnwrap(try manager.deviceRecord()).failedAttempts, 1)
        XCTAssertEqual(manager.status().failedAttempts, 1)
    }
}
