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

    /// The UUID names the device's files in the secret store and is read before the MAC
    /// can be checked: a path in its place must not reach the store.
    func testAKeybagWhoseUUIDIsAPathIsRefusedBeforeTheStore() throws {
        let device = try TestDevice()
        _ = try device.boot()
        let path = device.directory.keybagPath
        var keybag = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: path))) as? [String: Any])
        let escape = "escaped-\(getpid())"
        keybag["deviceUUID"] = "../" + escape
        try JSONSerialization.data(withJSONObject: keybag).write(to: URL(fileURLWithPath: path))
        XCTAssertThrowsError(try device.boot()) { XCTAssertTrue("\($0)".contains("names no valid device UUID"), "\($0)") }
        let parent = (device.secretStore as NSString).deletingLastPathComponent
        let reached = try FileManager.default.contentsOfDirectory(atPath: parent).filter { $0.hasPrefix(escape) }
        XCTAssertEqual(reached, [], "nothing was made or opened beside the store")
    }

    /// There is no migration: a keybag of another format is named as such, not as
    /// damage, and left as it was.
    func testAKeybagOfAnotherFormatIsRefusedAndLeftAsItWas() throws {
        let device = try TestDevice()
        _ = try device.boot()
        let path = device.directory.keybagPath
        let current = "\"formatVersion\" : \(KeybagFile.currentVersion),"
        let text = try String(contentsOfFile: path, encoding: .utf8)
        XCTAssertTrue(text.contains(current))
        let older = text.replacingOccurrences(of: current, with: "\"formatVersion\" : 4,")
        try older.write(toFile: path, atomically: true, encoding: .utf8)
        XCTAssertThrowsError(try device.boot()) { error in
            guard case DeviceError.unsupportedFormat(let root, 4) = error else { return XCTFail("\(error)") }
            XCTAssertEqual(root, device.directory.root)
            XCTAssertTrue("\(error)".contains("on-disk format version 4; this dpfs reads version 5 only"), "\(error)")
        }
        XCTAssertEqual(try String(contentsOfFile: path, encoding: .utf8), older, "the keybag is left as it was")
    }

    func testAKeybagLargerThanAnyIsRefusedWithoutReadingIt() throws {
        let device = try TestDevice()
        _ = try device.boot()
        XCTAssertEqual(truncate(device.directory.keybagPath, off_t(KeybagFile.largestSize + 1)), 0)
        XCTAssertThrowsError(try device.boot()) { XCTAssertTrue("\($0)".contains("larger than any keybag"), "\($0)") }
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

    func testAWaitSetUnderALaterClockLastsNoLongerThanItsDelay() {
        var policy = PasscodePolicy()
        let advanced = Date(timeIntervalSince1970: 1000 + 86_400)
        for i in 0..<5 { _ = policy.recordFailure(fingerprint: [UInt8(i)], now: advanced) }
        XCTAssertEqual(policy.waitRemaining(now: advanced), 60)
        let real = Date(timeIntervalSince1970: 1000)
        XCTAssertEqual(policy.waitRemaining(now: real), 60, "the fifth failure's minute, not a day and a minute")
        XCTAssertEqual(policy.waitRemaining(now: advanced.addingTimeInterval(30)), 30)
        XCTAssertNil(policy.waitRemaining(now: advanced.addingTimeInterval(61)))
    }

    func testAClampedWaitRunsDownFromTheRealClock() {
        var policy = PasscodePolicy()
        let advanced = Date(timeIntervalSince1970: 1000 + 36_000)
        for i in 0..<5 { _ = policy.recordFailure(fingerprint: [UInt8(i)], now: advanced) }
        let real = Date(timeIntervalSince1970: 1000)
        policy.clampWait(now: real)
        XCTAssertEqual(policy.waitRemaining(now: real.addingTimeInterval(20)), 40)
        XCTAssertNil(policy.waitRemaining(now: real.addingTimeInterval(61)), "over a minute after the mount, not ten hours")
        var current = PasscodePolicy()
        for i in 0..<5 { _ = current.recordFailure(fingerprint: [UInt8(i)], now: real) }
        current.clampWait(now: real.addingTimeInterval(10))
        XCTAssertEqual(current.waitRemaining(now: real.addingTimeInterval(10)), 50, "a wait on the real clock is kept")
    }

    func testAdoptingARecordedCount() {
        let now = Date(timeIntervalSince1970: 1000)
        var policy = PasscodePolicy()
        policy.failedAttempts = 4
        XCTAssertFalse(policy.adoptRecordedFailures(3, now: now), "never lowered")
        XCTAssertTrue(policy.adoptRecordedFailures(6, now: now))
        XCTAssertEqual(policy.failedAttempts, 6)
        XCTAssertEqual(policy.retryAfter, 1300, "the sixth failure's five minutes, from now")
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

    /// A create passes the wrap its nonce (from the I/O slots' nonce stream): the record
    /// carries that nonce and unwraps as one with a nonce of its own does.
    func testWrapWithAGivenNonce() throws {
        let device = try TestDevice()
        let manager = try device.boot()
        try manager.unlock(passcode: TestDevice.secret("1234"))
        let fileID = Sodium.randomBytes(16)
        let key = SecureBuffer.random(count: 32)
        let nonce = Sodium.randomBytes(AEAD.nonceSize)
        let wrapped = try XCTUnwrap(nonce.withUnsafeBytes {
            FileKeyWrap.wrap(key, fileID: fileID, as: .complete, device: manager, nonce: $0)
        })
        XCTAssertEqual(Array(wrapped.prefix(AEAD.nonceSize)), nonce)
        let unwrapped = try FileKeyWrap.unwrap(wrapped, fileID: fileID, as: .complete, device: manager)
        XCTAssertTrue(Sodium.equal(unwrapped.bytes, key.bytes))
        let again = try XCTUnwrap(FileKeyWrap.wrap(key, fileID: fileID, as: .complete, device: manager))
        XCTAssertNotEqual(Array(again.prefix(AEAD.nonceSize)), nonce, "without one, the system generator's")
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
