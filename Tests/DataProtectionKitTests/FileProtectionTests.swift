// File protection through DataProtectionKit against a real mount: classes set and read
// with FileProtectionType, EPERM when a class key is gone, writes with protection.
import DataProtectionKit
import Foundation
import Glibc
import XCTest

final class FileProtectionTests: MountedDeviceTestCase {
    func testProtectionRoundTripsWithFileProtectionType() throws {
        try device.control.unlock(passcodeFile: device.passcodeFile)
        let file = device.documents.appendingPathComponent("round-trip.txt")
        try Data("x".utf8).write(to: file)
        XCTAssertEqual(file.fileProtection, .completeUntilFirstUserAuthentication, "the sandbox default")
        let types: [FileProtectionType] = [.complete, .completeUnlessOpen, .none, .completeUntilFirstUserAuthentication]
        for protection in types {
            try file.setFileProtection(protection)
            XCTAssertEqual(try file.readFileProtection(), protection)
            XCTAssertEqual(try String(contentsOf: file, encoding: .utf8), "x", "content survives the rewrap")
        }
        // A directory's class is what its new children take.
        try device.documents.setFileProtection(.complete)
        XCTAssertEqual(device.documents.fileProtection, .complete)
        let child = device.documents.appendingPathComponent("child.txt")
        try Data("y".utf8).write(to: child)
        XCTAssertEqual(child.fileProtection, .complete)
        // FileManager's protectionKey, which Foundation alone ignores.
        try FileManager.default.setAttributesHonouringProtection([.protectionKey: FileProtectionType.none],
                                                                  ofItemAtPath: child.path)
        let attributes = try FileManager.default.attributesOfItemIncludingProtection(atPath: child.path)
        XCTAssertEqual(attributes[.protectionKey] as? FileProtectionType, FileProtectionType.none)
    }

    func testAClassGivenAtCreationBeforeTheFirstUnlock() throws {
        // The device has just booted: Documents (untilFirstAuth) takes no plain new file.
        let state = device.documents.appendingPathComponent("launch-state.txt")
        XCTAssertThrowsError(try Data("x".utf8).write(to: state)) { XCTAssertTrue($0.isProtectedDataUnavailable) }
        try Data("woken".utf8).writeProtected(to: state, options: .noFileProtection)
        XCTAssertEqual(state.fileProtection, FileProtectionType.none)
        let plain = device.documents.appendingPathComponent("plain.txt")
        try Data("p".utf8).write(to: plain, protection: .none)
        XCTAssertEqual(try String(contentsOf: plain, encoding: .utf8), "p")
        let marker = device.documents.appendingPathComponent("marker.txt")
        XCTAssertTrue(FileManager.default.createFileHonouringProtection(
            atPath: marker.path, contents: Data("m".utf8), attributes: [.protectionKey: FileProtectionType.none]))
        XCTAssertEqual(marker.fileProtection, FileProtectionType.none)
        let upload = device.documents.appendingPathComponent("upload.part")
        try Data("u".utf8).writeProtected(to: upload, options: [.atomic, .completeFileProtectionUnlessOpen])
        XCTAssertEqual(upload.fileProtection, .completeUnlessOpen)
        let secret = device.documents.appendingPathComponent("secret.txt")
        XCTAssertThrowsError(try Data("s".utf8).writeProtected(to: secret, options: .completeFileProtection)) {
            XCTAssertTrue($0.isProtectedDataUnavailable)
        }
        XCTAssertFalse(FileManager.default.fileExists(atPath: secret.path), "nothing is left of a refused write")
    }

    func testCompleteWhenUserInactiveWithApplesValues() throws {
        XCTAssertEqual(FileProtectionType.completeWhenUserInactive.rawValue, "NSFileProtectionCompleteWhenUserInactive")
        XCTAssertEqual(Data.WritingOptions.completeFileProtectionWhenUserInactive.rawValue, 0x5000_0000)
        try device.control.unlock(passcodeFile: device.passcodeFile)
        let feed = device.documents.appendingPathComponent("feed.json")
        try Data("{}".utf8).writeProtected(to: feed, options: [.atomic, .completeFileProtectionWhenUserInactive])
        XCTAssertEqual(feed.fileProtection, .completeWhenUserInactive)
        try device.control.lock(now: true)
        XCTAssertEqual(try String(contentsOf: feed, encoding: .utf8), "{}", "readable while locked")
        XCTAssertEqual(try device.control.userInactivePeriod, 24 * 3600, "the default")
        try device.control.advanceClock(by: try device.control.userInactivePeriod)
        XCTAssertThrowsError(try Data(contentsOf: feed)) { XCTAssertTrue($0.isProtectedDataUnavailable) }
        try device.control.unlock(passcodeFile: device.passcodeFile)
        XCTAssertEqual(try String(contentsOf: feed, encoding: .utf8), "{}")
    }

    func testOutsideTheSandboxIsAnErrorNotASilentNoOp() throws {
        let outside = device.work.appendingPathComponent("outside.txt")
        try Data("z".utf8).write(to: outside)
        XCTAssertThrowsError(try outside.setFileProtection(.complete)) { error in
            XCTAssertEqual(error.posixCode?.rawValue, ENOTSUP)
        }
        XCTAssertNil(outside.fileProtection)
        XCTAssertThrowsError(try Data("z".utf8).writeProtected(to: outside, options: .completeFileProtection))
        // A new file outside: "not supported here", not "no such file" (its directory is there).
        let new = device.work.appendingPathComponent("new-outside.txt")
        XCTAssertThrowsError(try Data("z".utf8).writeProtected(to: new, options: .completeFileProtection)) { error in
            XCTAssertEqual(error.posixCode?.rawValue, ENOTSUP)
        }
        let nowhere = device.work.appendingPathComponent("no-such-directory/new.txt")
        XCTAssertThrowsError(try Data("z".utf8).writeProtected(to: nowhere, options: .completeFileProtection)) { error in
            XCTAssertEqual(error.posixCode?.rawValue, ENOENT)
        }
    }

    func testCompleteFileIsEPERMAfterLockNowAndUntilFirstAuthStaysReadable() throws {
        try device.control.unlock(passcodeFile: device.passcodeFile)
        let diary = device.documents.appendingPathComponent("diary.txt")
        let notes = device.documents.appendingPathComponent("notes.txt")
        try Data("secret".utf8).writeProtected(to: diary, options: [.atomic, .completeFileProtection])
        try Data("notes".utf8).write(to: notes, protection: .completeUntilFirstUserAuthentication)
        XCTAssertEqual(diary.fileProtection, .complete)
        XCTAssertEqual(notes.fileProtection, .completeUntilFirstUserAuthentication)
        XCTAssertEqual(try device.control.state, .unlocked)

        XCTAssertTrue(try device.control.lock(now: true))
        XCTAssertEqual(try device.control.state, .locked)
        XCTAssertEqual(MountedDevice.openErrno(diary), EPERM)
        XCTAssertThrowsError(try Data(contentsOf: diary)) { error in
            XCTAssertTrue(error.isProtectedDataUnavailable, "\(error)")
        }
        XCTAssertEqual(try Data(contentsOf: notes), Data("notes".utf8))
        XCTAssertEqual(diary.fileProtection, .complete, "the class is metadata, readable while locked")
        // A new complete file cannot be made while locked; a completeUnlessOpen one can (iOS).
        XCTAssertThrowsError(try Data("new".utf8).writeProtected(to: device.documents.appendingPathComponent("new.txt"),
                                                                 options: .completeFileProtection)) { error in
            XCTAssertTrue(error.isProtectedDataUnavailable, "\(error)")
        }
        XCTAssertNoThrow(try Data("inbox".utf8).writeProtected(to: device.documents.appendingPathComponent("inbox.txt"),
                                                               options: .completeFileProtectionUnlessOpen))

        try device.control.unlock(passcodeFile: device.passcodeFile)
        XCTAssertEqual(try device.control.state, .unlocked)
        XCTAssertEqual(try Data(contentsOf: diary), Data("secret".utf8))
    }

    func testLockWithGraceWaitsThenLocks() throws {
        try device.control.unlock(passcodeFile: device.passcodeFile)
        let diary = device.documents.appendingPathComponent("diary.txt")
        try Data("secret".utf8).write(to: diary, protection: .complete)
        XCTAssertEqual(try device.control.gracePeriod, 2)
        try device.control.lock()
        XCTAssertEqual(try device.control.state, .locking)
        XCTAssertEqual(MountedDevice.openErrno(diary), 0, "the grace period still reads")
        try device.control.waitFor(state: .locked, timeout: 15)
        XCTAssertEqual(MountedDevice.openErrno(diary), EPERM)
    }

    func testRestartTakesUntilFirstAuthAway() throws {
        try device.control.unlock(passcodeFile: device.passcodeFile)
        let notes = device.documents.appendingPathComponent("notes.txt")
        let open = device.documents.appendingPathComponent("open.txt")
        try Data("notes".utf8).write(to: notes, protection: .completeUntilFirstUserAuthentication)
        try Data("open".utf8).write(to: open, protection: .none)
        try device.control.restart()
        XCTAssertEqual(try device.control.state, .beforeFirstUnlock)
        XCTAssertEqual(MountedDevice.openErrno(notes), EPERM)
        XCTAssertEqual(try Data(contentsOf: open), Data("open".utf8), "class none is always there")
        try device.control.unlock(passcode: DevicePasscode(file: device.passcodeFile))
        XCTAssertEqual(try Data(contentsOf: notes), Data("notes".utf8))
    }

    func testWrongPasscodeIsRefusedAndWaitForTimesOut() throws {
        XCTAssertThrowsError(try device.control.unlock(passcodeFile: device.wrongPasscodeFile)) { error in
            guard case DeviceError.refused = error else { return XCTFail("\(error)") }
        }
        XCTAssertEqual(try device.control.state, .beforeFirstUnlock)
        let started = Date()
        XCTAssertThrowsError(try device.control.waitFor(state: .unlocked, timeout: 0.3)) { error in
            XCTAssertEqual(error as? DeviceError, .stateNotReached(wanted: .unlocked, last: .beforeFirstUnlock, seconds: 0.3))
        }
        XCTAssertLessThan(Date().timeIntervalSince(started), 3)
    }
}
