// A directory's class change comes as a FUSE request, so it must never wait for a
// passcode check: a lock holds the lock state while the kernel drops pages that
// requests in flight hold, and a request that waits there can wedge the lock. Recorded
// while a passcode is checked, the class is kept: in memory, and in the keybag the
// check saves afterwards from its own copy.
import DPFSProtocol
import DataProtection
import Dispatch
import Foundation
import Synchronization
import XCTest

final class DirectoryClassDuringUnlockTests: XCTestCase {
    func testAClassRecordedWhileAPasscodeIsCheckedNeitherWaitsNorIsLost() throws {
        let device = try TestDevice()
        let booted = Mutex<LockStateManager?>(nil)
        // The directory the hook records a class for at the next check; whether it did
        // while the check held the lock state.
        let toRecord = Mutex<[UInt8]?>(nil)
        let recordedDuringCheck = Mutex<[String]>([])
        let hooks = TestHooks(delayScale: 0, passcodeChecked: {
            guard let manager = booted.withLock({ $0 }), let directoryID = toRecord.withLock({ $0.take() }) else { return }
            let done = DispatchSemaphore(value: 0)
            Thread.detachNewThread {
                do { try manager.recordDirectoryClass(directoryID, .complete) } catch { XCTFail("recording: \(error)") }
                done.signal()
            }
            if done.wait(timeout: .now() + 60) == .success {
                recordedDuringCheck.withLock { $0.append(Hex.encode(directoryID)) }
            }
        })
        let manager = try LockStateManager(directory: device.directory, gracePeriod: 0, testHooks: hooks)
        booted.withLock { $0 = manager }
        defer { booted.withLock { $0 = nil } }
        let passcode = try XCTUnwrap(device.passcode)
        let first = [UInt8](repeating: 1, count: 16)
        let second = [UInt8](repeating: 2, count: 16)

        // A failure first: the unlock that follows saves the keybag (its count reset).
        XCTAssertThrowsError(try manager.unlock(passcode: TestDevice.secret("0000")))
        toRecord.withLock { $0 = first }
        try manager.unlock(passcode: passcode)
        // A check that saves nothing (no failure since), as a prompt's passcode is.
        toRecord.withLock { $0 = second }
        try manager.verifyPasscode(passcode)
        XCTAssertEqual(recordedDuringCheck.withLock { $0 }, [Hex.encode(first), Hex.encode(second)],
                       "each class change was recorded while the check held the lock state")
        XCTAssertEqual(manager.recordedDirectoryClass(first), .complete)
        XCTAssertEqual(manager.recordedDirectoryClass(second), .complete)

        // Another save (a failure's), then the keybag as a boot reads it.
        XCTAssertThrowsError(try manager.unlock(passcode: TestDevice.secret("0000")))
        let rebooted = try device.boot()
        XCTAssertEqual(rebooted.recordedDirectoryClass(first), .complete, "kept by the unlock's save")
        XCTAssertEqual(rebooted.recordedDirectoryClass(second), .complete, "kept by the save after the check")
    }

    func testTheKeybagAClassChangeSavedDuringACheckCannotBePutBack() throws {
        // An unlock that saves nothing, a class saved during its check, then a passcode
        // change: the keybag of the class change (which the old passcode opens) is old.
        let device = try TestDevice()
        let booted = Mutex<LockStateManager?>(nil)
        let savedByTheChange = Mutex<Data?>(nil)
        let keybagPath = device.directory.keybagPath
        let hooks = TestHooks(delayScale: 0, passcodeChecked: {
            guard let manager = booted.withLock({ $0.take() }) else { return }
            let done = DispatchSemaphore(value: 0)
            Thread.detachNewThread {
                do {
                    try manager.recordDirectoryClass([UInt8](repeating: 3, count: 16), .complete)
                    let bytes = try Data(contentsOf: URL(fileURLWithPath: keybagPath))
                    savedByTheChange.withLock { $0 = bytes }
                } catch { XCTFail("recording: \(error)") }
                done.signal()
            }
            _ = done.wait(timeout: .now() + 60)
        })
        let manager = try LockStateManager(directory: device.directory, gracePeriod: 0, testHooks: hooks)
        booted.withLock { $0 = manager }
        try manager.unlock(passcode: try XCTUnwrap(device.passcode))
        try manager.changePasscode(current: device.passcode, new: TestDevice.secret("5678"))
        let old = try XCTUnwrap(savedByTheChange.withLock { $0 }, "the class change was saved during the check")
        try old.write(to: URL(fileURLWithPath: keybagPath))
        XCTAssertThrowsError(try device.boot(), "the old passcode's keybag is refused") { error in
            guard case .rolledBack = error as? DeviceRecordError else { return XCTFail("\(error)") }
        }
    }
}
