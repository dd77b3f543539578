// The seal helpers of a large request: a helper whose thread cannot start (the daemon
// at RLIMIT_NPROC) leaves its share of the blocks to the caller, who never waits for
// it; every block is still done once.
@testable import BlockStore
import DPFSProtocol
import Foundation
import Glibc
import Synchronization
import Testing

@Suite struct BlockWorkersTests {
    @Test func helpersThatCannotStartLeaveTheirShareToTheCaller() throws {
        let workers = BlockWorkers(helpers: 3) { (_, _) throws(PosixThread.StartError) in throw PosixThread.StartError(code: EAGAIN) }
        #expect(workers.helperCount == 0)
        #expect(workers.startFailure?.code == EAGAIN)
        let done = try #require(runWithin(.seconds(30), workers, 0..<256))
        #expect(done == Array(0..<256), "every block once, on the calling thread")
    }

    @Test func theHelpersThatStartShareTheRest() throws {
        let starts = Atomic<Int>(0)
        let workers = BlockWorkers(helpers: 3) { (name, body) throws(PosixThread.StartError) in
            // The first start works, the others fail.
            guard starts.add(1, ordering: .relaxed).newValue == 1 else { throw PosixThread.StartError(code: EAGAIN) }
            return try PosixThread.start(named: name, body)
        }
        #expect(workers.helperCount == 1)
        for _ in 0..<20 {
            let done = try #require(runWithin(.seconds(30), workers, 0..<256))
            #expect(done == Array(0..<256))
        }
    }
}

/// The blocks `workers` ran `range` over, sorted; nil if the run did not end within
/// `limit` (it is left waiting on a thread of its own).
private func runWithin(_ limit: Duration, _ workers: BlockWorkers, _ range: Range<Int>) -> [Int]? {
    let result = Mutex<[Int]?>(nil)
    let finished = DispatchSemaphore(value: 0)
    let started = try? PosixThread.start(named: "test-run") {
        let seen = Mutex<[Int]>([])
        let ok = workers.run(range) { part in
            seen.withLock { $0.append(contentsOf: part) }
            return true
        }
        result.withLock { $0 = ok ? seen.withLock { $0.sorted() } : nil }
        finished.signal()
    }
    guard started != nil else { return nil }
    guard finished.wait(timeout: .now() + .milliseconds(Int(limit / .milliseconds(1)))) == .success else { return nil }
    return result.withLock { $0 }
}
