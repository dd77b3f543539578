// The closures other parts hand the device (the mount's inode count and transport for
// status, a biometry prompt's hand-off) are called as they were given, however often:
// held as a Mutex's own optional value, each access rewrapped one in a further
// reabstraction thunk, and every status request ran through all those before.
import DataProtection
import Foundation
import Synchronization
import XCTest

final class StatusSourceTests: XCTestCase {
    func testStatusCallsTheMountsSourcesAtTheSameDepthEveryTime() throws {
        let manager = try TestDevice().boot()
        let transportDepths = Mutex<[Int]>([])
        let inodeDepths = Mutex<[Int]>([])
        manager.setTransport {
            transportDepths.withLock { $0.append(stackDepth()) }
            return "/dev/fuse"
        }
        manager.setMountedInodeCount {
            inodeDepths.withLock { $0.append(stackDepth()) }
            return 7
        }
        for _ in 0..<500 {
            let status = manager.status()
            XCTAssertEqual(status.transport, "/dev/fuse")
            XCTAssertEqual(status.inodes, 7)
        }
        for depths in [transportDepths.withLock { $0 }, inodeDepths.withLock { $0 }] {
            XCTAssertEqual(depths.count, 500)
            XCTAssertEqual(Set(depths).count, 1, "the call depth grew: \(depths.first ?? 0) → \(depths.last ?? 0)")
        }
    }
}

/// Frames on the calling thread's stack.
private func stackDepth() -> Int { Thread.callStackReturnAddresses.count }
