import DataProtection
import Synchronization
import XCTest

final class KeybagTests: XCTestCase {
    func testUnlockWithRightAndWrongPasscode() throws {
        let device = try TestDevice()
        let manager = try device.boot()
        XCTAssertEqual(manager.phase, .beforeFirstUnlock)
        XCTAssertTrue(manager.isAvailable(.none))
        XCTAssertFalse(manager.isAvailable(.untilFirstAuth))
        XCTAssertThrowsError(try manager.unlock(passcode: TestDevice.secret("0000"))) {
            XCTAssertEqual($0 as? LockError, .wrongPasscode(failedAttempts: 1, wait: nil))
        }
        try manager.unlock(passcode: TestDevice.secret("1234"))
        XCTAssertEqual(manager.phase, .unlocked)
        XCTAssertTrue(ProtectionClass.allCases.allSatisfy(manager.isAvailable))
        XCTAssertEqual(manager.status().failedAttempts, 0, "success resets the counter")
    }

    func testLockWipesCompleteAndCompleteUnlessOpenOnly() throws {
        let device = try TestDevice()
        let manager = try device.boot()
        try manager.unlock(passcode: TestDevice.secret("1234"))
        let revoked = Mutex<Set<ProtectionClass>>([])
        manager.addRevoker { classes, _ in revoked.withLock { $0 = classes } }
        XCTAssertTrue(manager.lock(now: true))
        XCTAssertEqual(manager.phase, .locked)
        XCTAssertEqual(revoked.withLock { $0 }, [.complete, .completeUnlessOpen])
        XCTAssertFalse(manager.isAvailable(.complete))
        XCTAssertFalse(manager.isAvailable(.completeUnlessOpen))
        XCTAssertTrue(manager.isAvailable(.untilFirstAuth))
        manager.restart()
        XCTAssertEqual(manager.phase, .beforeFirstUnlock)
        XCTAssertFalse(manager.isAvailable(.untilFirstAuth))
        XCTAssertTrue(manager.isAvailable(.none))
    }

    func testGracePeriodWipesLaterAndUnlockCancels() throws {
        let device = try TestDevice()
        let manager = try device.boot(gracePeriod: 0.3)
        try manager.unlock(passcode: TestDevice.secret("1234"))
        manager.lock()
        XCTAssertEqual(manager.phase, .locking)
        XCTAssertTrue(manager.isAvailable(.complete), "still available during the grace period")
        Thread.sleep(forTimeInterval: 0.6)
        XCTAssertEqual(manager.phase, .locked)
        XCTAssertFalse(manager.isAvailable(.complete))
        try manager.unlock(passcode: TestDevice.secret("1234"))
        manager.lock()
        try manager.unlock(passcode: TestDevice.secret("1234"))
        Thread.sleep(forTimeInterval: 0.6)
        XCTAssertEqual(manager.phase, .unlocked, "an unlock during the grace period cancels the wipe")
    }

    func testPasscodeChangeRewrapsAndSurvivesReboot() throws {
        let device = try TestDevice()
        let manager = try device.boot()
        try manager.changePasscode(current: TestDevice.secret("1234"), new: TestDevice.secret("5678"))
        let rebooted = try device.boot()
        XCTAssertThrowsError(try rebooted.unlock(passcode: TestDevice.secret("1234")))
        try rebooted.unlock(passcode: TestDevice.secret("5678"))
        XCTAssertThrowsError(try rebooted.changePasscode(current: TestDevice.secret("nope"), new: nil))
        try rebooted.changePasscode(current: TestDevice.secret("5678"), new: nil)
        let open = try device.boot()
        XCTAssertEqual(open.phase, .unlocked, "without a passcode the device boots available")
        XCTAssertTrue(ProtectionClass.allCases.allSatisfy(open.isAvailable))
        XCTAssertFalse(open.lock(now: true), "nothing to lock without a passcode")
    }

    func testFailedAttemptsPersistAndRepeatsCountOnce() throws {
        let device = try TestDevice()
        let manager = try device.boot()
        for guess in ["1", "2", "2", "3"] { _ = try? manager.unlock(passcode: TestDevice.secret(guess)) }
        XCTAssertEqual(manager.status().failedAttempts, 3)
        XCTAssertEqual(try device.boot().status().failedAttempts, 3, "the counter survives a reboot")
    }

    func testEraseAfterDestroysTheKeys() throws {
        let device = try TestDevice(eraseAfter: 2)
        let manager = try device.boot()
        _ = try? manager.unlock(passcode: TestDevice.secret("1"))
        XCTAssertThrowsError(try manager.unlock(passcode: TestDevice.secret("2"))) {
            XCTAssertEqual($0 as? LockError, .erased)
        }
        XCTAssertTrue(manager.status().erased)
        let rebooted = try device.boot()
        XCTAssertTrue(rebooted.status().erased)
        XCTAssertFalse(rebooted.status().passcodeSet)
        XCTAssertThrowsError(try rebooted.unlock(passcode: TestDevice.secret("1234")))
    }
}

final class KeybagTamperTests: XCTestCase {
    func testAnEditedKeybagIsRefused() throws {
        let device = try TestDevice()
        _ = try device.boot()
        let path = device.directory.keybagPath
        let text = try String(contentsOfFile: path, encoding: .utf8)
        try text.replacingOccurrences(of: "\"passcodeSet\" : true", with: "\"passcodeSet\" : false")
            .write(toFile: path, atomically: true, encoding: .utf8)
        XCTAssertThrowsError(try device.boot()) { XCTAssertTrue("\($0)".contains("MAC")) }
    }

}

/// keybag.seq that cannot vouch for the keybag counts as the worst case (dpfs(5)).
final class KeybagSequenceTests: XCTestCase {
    func testJudgingTheRecord() {
        XCTAssertEqual(KeybagSequence.judge(recordText: "7\n", generation: 7), .vouches)
        XCTAssertEqual(KeybagSequence.judge(recordText: "6\n", generation: 7), .vouches, "a crash between the writes")
        XCTAssertEqual(KeybagSequence.judge(recordText: nil, generation: 7), .missing)
        for garbled in ["garbage\n", "", "\n", "-3", "7x", "+7", "99999999999999999999999"] {
            XCTAssertEqual(KeybagSequence.judge(recordText: garbled, generation: 7), .garbled, garbled)
        }
        XCTAssertEqual(KeybagSequence.judge(recordText: "9\n", generation: 7), .ahead(recorded: 9))
        XCTAssertNil(KeybagSequence.vouches.distrust(generation: 7))
        XCTAssertNotNil(KeybagSequence.missing.distrust(generation: 7))
    }

    /// Five failures, then keybag.seq is tampered with; a boot must not see fewer.
    private func failFiveTimesThen(_ tamper: (TestDevice) throws -> Void) throws -> TestDevice {
        let device = try TestDevice()
        let manager = try device.boot()
        for guess in ["1", "2", "3", "4", "5"] { _ = try? manager.unlock(passcode: TestDevice.secret(guess)) }
        XCTAssertEqual(manager.status().failedAttempts, 5)
        try tamper(device)
        return device
    }

    private func assertWorstCase(_ device: TestDevice, _ reason: String, file: StaticString = #filePath, line: UInt = #line) throws {
        let manager = try device.boot(delayScale: 1)
        let status = manager.status()
        XCTAssertEqual(status.failedAttempts, 9, file: file, line: line)
        XCTAssertGreaterThan(status.retryAfter ?? 0, 3590, "the highest tier's hour", file: file, line: line)
        XCTAssertTrue(status.worstCaseReason?.contains(reason) == true, "\(String(describing: status.worstCaseReason))",
                      file: file, line: line)
        XCTAssertNotNil(manager.bootNotice, file: file, line: line)
        XCTAssertThrowsError(try manager.unlock(passcode: TestDevice.secret("1234")), file: file, line: line) {
            guard case .mustWait = $0 as? LockError else { return XCTFail("\($0)", file: file, line: line) }
        }
        // Saved at once: keybag.seq vouches again, and a reboot keeps the count and the wait.
        let again = try device.boot(delayScale: 1)
        XCTAssertNil(again.bootNotice, "keybag.seq was rewritten", file: file, line: line)
        XCTAssertEqual(again.status().failedAttempts, 9, file: file, line: line)
        XCTAssertGreaterThan(again.status().retryAfter ?? 0, 3500, file: file, line: line)
    }

    func testAMissingRecordCountsAsTheWorstCase() throws {
        let device = try failFiveTimesThen { try FileManager.default.removeItem(atPath: $0.directory.keybagSequencePath) }
        try assertWorstCase(device, "missing")
    }

    func testAGarbledRecordCountsAsTheWorstCase() throws {
        let device = try failFiveTimesThen {
            try "garbage\n".write(toFile: $0.directory.keybagSequencePath, atomically: true, encoding: .utf8)
        }
        try assertWorstCase(device, "generation number")
    }

    func testAnOlderKeybagCountsAsTheWorstCase() throws {
        let device = try TestDevice()
        let old = try Data(contentsOf: URL(fileURLWithPath: device.directory.keybagPath))
        let manager = try device.boot()
        for guess in ["1", "2", "3", "4", "5"] { _ = try? manager.unlock(passcode: TestDevice.secret(guess)) }
        try old.write(to: URL(fileURLWithPath: device.directory.keybagPath))
        try assertWorstCase(device, "older")
    }

    func testTheRightPasscodeAfterTheWaitResetsIt() throws {
        let device = try failFiveTimesThen { try FileManager.default.removeItem(atPath: $0.directory.keybagSequencePath) }
        let manager = try device.boot(delayScale: 0)  // the hour, already waited
        XCTAssertEqual(manager.status().failedAttempts, 9)
        try manager.unlock(passcode: TestDevice.secret("1234"))
        XCTAssertEqual(manager.status().failedAttempts, 0)
        XCTAssertNil(manager.status().worstCaseReason)
        XCTAssertEqual(try device.boot().status().failedAttempts, 0, "the reset is saved")
    }

    func testAMissingRecordNeverErases() throws {
        let device = try TestDevice(eraseAfter: 6)
        let manager = try device.boot()
        for guess in ["1", "2", "3"] { _ = try? manager.unlock(passcode: TestDevice.secret(guess)) }
        try FileManager.default.removeItem(atPath: device.directory.keybagSequencePath)
        let booted = try device.boot(delayScale: 0)
        XCTAssertEqual(booted.status().failedAttempts, 5, "one below --erase-after")
        XCTAssertFalse(booted.status().erased)
        try booted.unlock(passcode: TestDevice.secret("1234"))
    }
}

final class PasscodePolicyTests: XCTestCase {
    func testIOSDelayTable() {
        let delays = (1...10).map { PasscodePolicy.delay(afterFailures: $0) }
        XCTAssertEqual(delays, [0, 0, 0, 0, 60, 300, 900, 900, 3600, 3600])
    }

    func testRecordFailure() {
        var policy = PasscodePolicy(eraseAfter: 10)
        let now = Date(timeIntervalSince1970: 1000)
        for i in 0..<5 { XCTAssertEqual(policy.recordFailure(fingerprint: [UInt8(i)], now: now), .counted) }
        XCTAssertEqual(policy.retryAfter, 1060)
        XCTAssertEqual(policy.recordFailure(fingerprint: [4], now: now), .repeated)
        XCTAssertEqual(policy.failedAttempts, 5)
        policy.recordSuccess()
        XCTAssertEqual(policy.failedAttempts, 0)
        XCTAssertNil(policy.retryAfter)
    }

    func testAssumeWorstCase() {
        let now = Date(timeIntervalSince1970: 1000)
        var policy = PasscodePolicy()
        policy.failedAttempts = 5
        policy.assumeWorstCase("keybag.seq is missing", now: now)
        XCTAssertEqual(policy.failedAttempts, 9, "the highest delay tier")
        XCTAssertEqual(policy.retryAfter, 4600, "its full hour")
        XCTAssertEqual(policy.worstCaseReason, "keybag.seq is missing")
        var higher = PasscodePolicy()
        higher.failedAttempts = 12
        higher.retryAfter = 9000
        higher.assumeWorstCase("x", now: now)
        XCTAssertEqual(higher.failedAttempts, 12, "never lowered")
        XCTAssertEqual(higher.retryAfter, 9000, "never shortened")
        var erasing = PasscodePolicy(eraseAfter: 4)
        erasing.assumeWorstCase("x", now: now)
        XCTAssertEqual(erasing.failedAttempts, 3, "one below --erase-after")
        XCTAssertEqual(erasing.recordFailure(fingerprint: [1], now: now), .erase, "the next wrong passcode erases")
        policy.recordSuccess()
        XCTAssertNil(policy.worstCaseReason)
    }
}

final class FileKeyWrapTests: XCTestCase {
    func testEachClassWrapsAndUnwrapsWhenAvailable() throws {
        let device = try TestDevice()
        let manager = try device.boot()
        try manager.unlock(passcode: TestDevice.secret("1234"))
        let fileID = Sodium.randomBytes(16)
        for protectionClass in ProtectionClass.allCases {
            let key = SecureBuffer.random(count: 32)
            let wrapped = try XCTUnwrap(FileKeyWrap.wrap(key, fileID: fileID, as: protectionClass, device: manager))
            let unwrapped = try FileKeyWrap.unwrap(wrapped, fileID: fileID, as: protectionClass, device: manager)
            XCTAssertTrue(Sodium.equal(unwrapped.bytes, key.bytes), "\(protectionClass)")
            XCTAssertThrowsError(try FileKeyWrap.unwrap(wrapped, fileID: Sodium.randomBytes(16), as: protectionClass, device: manager),
                                 "a key bound to another file does not unwrap (\(protectionClass))")
        }
    }

    func testCompleteUnlessOpenWrapsWhileLocked() throws {
        let device = try TestDevice()
        let manager = try device.boot()
        let fileID = Sodium.randomBytes(16)
        let key = SecureBuffer.random(count: 32)
        XCTAssertNil(FileKeyWrap.wrap(key, fileID: fileID, as: .complete, device: manager), "complete cannot wrap before unlock")
        let wrapped = try XCTUnwrap(FileKeyWrap.wrap(key, fileID: fileID, as: .completeUnlessOpen, device: manager))
        XCTAssertThrowsError(try FileKeyWrap.unwrap(wrapped, fileID: fileID, as: .completeUnlessOpen, device: manager))
        try manager.unlock(passcode: TestDevice.secret("1234"))
        let unwrapped = try FileKeyWrap.unwrap(wrapped, fileID: fileID, as: .completeUnlessOpen, device: manager)
        XCTAssertTrue(Sodium.equal(unwrapped.bytes, key.bytes))
    }
}
