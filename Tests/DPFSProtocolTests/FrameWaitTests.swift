// A caller waiting for its reply sleeps until the reply comes: the daemon's taking in
// of the request must not wake it (as it does a thread asleep in recv).
import CLinux
import DPFSProtocol
import Foundation
import Glibc
import Synchronization
import Testing

@Suite struct FrameWaitTests {
    typealias TestFrame = Frame<LockedSecret>

    @Test func aWaitingCallerSleepsWhileThePeerTakesItsRequest() throws {
        let (caller, daemon) = try connectedPair()
        defer { close(caller); close(daemon) }
        try TestFrame(body: Array("request".utf8)).write(to: caller)

        let waiter = Waiter()
        Thread {
            waiter.thread.store(dpfs_thread_id(), ordering: .releasing)
            waiter.reply.withLock { $0 = try? TestFrame.read(from: caller).body }
            waiter.done.signal()
        }.start()
        let thread = try #require(waitFor {
            let thread = waiter.thread.load(ordering: .acquiring)
            return thread > 0 ? thread : nil
        })
        #expect(waitFor { Self.isAsleep(thread) ? true : nil } == true, "the caller never went to sleep")
        let switchesAsleep = try #require(Self.voluntarySwitches(thread))

        #expect(try TestFrame.read(from: daemon).body == Array("request".utf8))
        // A wake-up for nothing would come at once; a quarter second is plenty to see it.
        let wokenForNothing = waitFor(upTo: .milliseconds(250)) {
            (Self.voluntarySwitches(thread) ?? 0) > switchesAsleep ? true : nil
        }
        #expect(wokenForNothing == nil, "the caller was woken when the peer took in its request")

        try TestFrame(body: Array("reply".utf8)).write(to: daemon)
        waiter.done.wait()
        #expect(waiter.reply.withLock { $0 } == Array("reply".utf8))
    }

    @Test func aCallerWithAReceiveTimeoutGivesUpAfterIt() throws {
        let (caller, daemon) = try connectedPair()
        defer { close(caller); close(daemon) }
        var timeout = timeval(tv_sec: 0, tv_usec: 200_000)
        setsockopt(caller, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        let outcome = Mutex<(any Error)?>(nil)
        let done = DispatchSemaphore(value: 0)
        let started = ContinuousClock.now
        Thread {
            do { _ = try TestFrame.read(from: caller) } catch { outcome.withLock { $0 = error } }
            done.signal()
        }.start()
        if done.wait(timeout: .now() + 30) == .timedOut {
            Issue.record("the read still waits 30 s after its 0.2 s timeout")
            shutdown(caller, Int32(SHUT_RDWR))  // lets the thread go before the descriptors close
            done.wait()
            return
        }
        #expect(ContinuousClock.now - started >= .milliseconds(200))
        let error = try #require(outcome.withLock { $0 })
        guard case FrameError.io(let code) = error else {
            Issue.record("expected FrameError.io(EAGAIN), got \(error)")
            return
        }
        #expect(code == EAGAIN)
    }

    final class Waiter: Sendable {
        let thread = Atomic<Int32>(0)
        let reply = Mutex<[UInt8]?>(nil)
        let done = DispatchSemaphore(value: 0)
    }

    /// `condition`'s first non-nil answer, asked every millisecond until the deadline.
    func waitFor<T>(upTo limit: Duration = .seconds(30), _ condition: () -> T?) -> T? {
        let deadline = ContinuousClock.now + limit
        repeat {
            if let value = condition() { return value }
            usleep(1000)
        } while ContinuousClock.now < deadline
        return condition()
    }

    static func isAsleep(_ thread: Int32) -> Bool {
        // /proc/self/task/TID/stat: "tid (comm) S …"; comm may hold spaces, not ')'.
        guard let stat = try? String(contentsOfFile: "/proc/self/task/\(thread)/stat", encoding: .utf8),
              let close = stat.lastIndex(of: ")") else { return false }
        return stat[close...].dropFirst(2).first == "S"
    }

    static func voluntarySwitches(_ thread: Int32) -> Int? {
        guard let status = try? String(contentsOfFile: "/proc/self/task/\(thread)/status", encoding: .utf8) else { return nil }
        let line = status.split(separator: "\n").first { $0.hasPrefix("voluntary_ctxt_switches:") }
        return line.flatMap { Int($0.split(separator: "\t").last?.trimmingCharacters(in: .whitespaces) ?? "") }
    }
}
