// The lock-state manager's core behind a reader-writer lock: keychain calls and file
// opens read it side by side, and a lock's wipe (a writer) still gets in while they
// keep coming.
@testable import DataProtection
import Foundation
import Synchronization
import XCTest

final class ReadWriteLockedTests: XCTestCase {
    func testReadersHoldTheLockTogether() {
        let locked = ReadWriteLocked(0)
        let inside = DispatchSemaphore(value: 0)
        let bothIn = DispatchSemaphore(value: 0)
        let finished = DispatchGroup()
        for _ in 0..<2 {
            DispatchQueue.global().async(group: finished) {
                locked.withReadLock { _ in
                    inside.signal()
                    // Waits, still reading, until the other reader is inside too.
                    _ = bothIn.wait(timeout: .now() + 60)
                }
            }
        }
        XCTAssertEqual(inside.wait(timeout: .now() + 60), .success)
        XCTAssertEqual(inside.wait(timeout: .now() + 60), .success, "the second reader waited for the first")
        bothIn.signal()
        bothIn.signal()
        XCTAssertEqual(finished.wait(timeout: .now() + 60), .success)
    }

    func testAWriterGetsInWhileReadersKeepComing() {
        let locked = ReadWriteLocked(0)
        let stop = Atomic(false)
        let readers = DispatchGroup()
        let started = DispatchSemaphore(value: 0)
        for _ in 0..<4 {
            readers.enter()
            Thread {
                defer { readers.leave() }
                started.signal()
                // Overlapping readers: with readers preferred, one is always inside.
                while !stop.load(ordering: .relaxed) {
                    locked.withReadLock { _ in _ = usleep(200) }
                }
            }.start()
        }
        let wrote = DispatchSemaphore(value: 0)
        Thread {
            // The writer comes once every reader is reading.
            for _ in 0..<4 { started.wait() }
            for _ in 0..<20 { locked.withLock { $0 += 1 } }
            wrote.signal()
        }.start()
        let result = wrote.wait(timeout: .now() + 60)
        stop.store(true, ordering: .relaxed)
        XCTAssertEqual(result, .success, "the writer was held off by readers")
        XCTAssertEqual(readers.wait(timeout: .now() + 60), .success)
        XCTAssertEqual(locked.withReadLock { $0 }, 20)
    }
}
