// The pool lock of keychain calls: one thread inside at a time, however many contend,
// and a body that throws leaves the lock free.
import DPFSProtocol
import Foundation
import Synchronization
import Testing

@Suite struct PosixMutexTests {
    @Test func oneThreadIsInsideAtATime() {
        let counter = PosixMutex(0)
        let inside = Atomic(0)
        let overlaps = Atomic(0)
        let threads = 8, rounds = 20_000
        let finished = DispatchGroup()
        for _ in 0..<threads {
            finished.enter()
            Thread {
                defer { finished.leave() }
                for round in 0..<rounds {
                    counter.withLock { value in
                        if inside.add(1, ordering: .sequentiallyConsistent).newValue > 1 {
                            overlaps.add(1, ordering: .relaxed)
                        }
                        let read = value
                        // Now and then the holder gives up its CPU inside the lock.
                        if round % 1000 == 0 { sched_yield() }
                        value = read + 1
                        inside.subtract(1, ordering: .sequentiallyConsistent)
                    }
                }
            }.start()
        }
        #expect(finished.wait(timeout: .now() + 120) == .success)
        #expect(overlaps.load(ordering: .relaxed) == 0, "two threads were inside at once")
        #expect(counter.withLock { $0 } == threads * rounds, "increments were lost")
    }

    @Test func aThrowingBodyLeavesTheLockFree() {
        struct Refused: Error {}
        let locked = PosixMutex([Int]())
        #expect(throws: Refused.self) {
            try locked.withLock { (values: inout [Int]) throws(Refused) in
                values.append(1)
                throw Refused()
            }
        }
        let took = DispatchSemaphore(value: 0)
        Thread {
            locked.withLock { $0.append(2) }
            took.signal()
        }.start()
        #expect(took.wait(timeout: .now() + 60) == .success, "the lock stayed held after the throw")
        #expect(locked.withLock { $0 } == [1, 2])
    }
}
