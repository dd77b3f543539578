// ProtectedData.startObserving against a real mount: many threads starting at once make
// one subscription, the end of the event stream is announced, a restart without a
// passcode posts nothing, and handlers run on the named observing thread.
import DataProtectionKit
import Foundation
import Glibc
import Synchronization
import XCTest

final class ProtectedDataObservingTests: XCTestCase {
    var device: MountedDevice?
    private let recorder = NotificationRecorder()

    override func tearDown() {
        recorder.stop()
        device?.tearDown()
        device = nil
    }

    func testConcurrentStartsMakeOneSubscription() throws {
        let device = try MountedDevice()
        self.device = device
        try device.control.unlock(passcodeFile: device.passcodeFile)
        recorder.start()
        for round in 1...6 {
            ProtectedData.stopObserving()
            XCTAssertEqual(Self.startObservingAtOnce(threads: 12), [], "round \(round)")
            XCTAssertTrue(ProtectedData.isObserving, "round \(round)")
            recorder.reset()
            try device.control.lock()
            try device.control.unlock(passcodeFile: device.passcodeFile)
            XCTAssertTrue(recorder.wait(timeout: 15) { $0.contains("didBecomeAvailable") }, "round \(round): \(recorder.events)")
            // A second subscription's copies would come on their own thread: give them time.
            _ = recorder.wait(timeout: 1) { $0.count > 2 }
            XCTAssertEqual(recorder.events, ["willBecomeUnavailable", "didBecomeAvailable"], "round \(round)")
        }
    }

    /// Calls startObserving on `threads` threads released together; returns their
    /// errors once every call has returned.
    private static func startObservingAtOnce(threads: Int) -> [String] {
        let failures = Mutex<[String]>([])
        let gate = DispatchSemaphore(value: 0)
        let done = DispatchGroup()
        for _ in 0..<threads {
            done.enter()
            Thread {
                gate.wait()
                do { try ProtectedData.startObserving() } catch {
                    failures.withLock { $0.append("\(error)") }
                }
                done.leave()
            }.start()
        }
        for _ in 0..<threads { gate.signal() }
        if done.wait(timeout: .now() + 60) == .timedOut { return ["a start did not return within 60 s"] }
        return failures.withLock { $0 }
    }

    func testUnmountIsAnnounced() throws {
        let device = try MountedDevice()
        self.device = device
        try device.control.unlock(passcodeFile: device.passcodeFile)
        recorder.start()
        try ProtectedData.startObserving()
        try device.run(["unmount", device.mountpoint])
        XCTAssertTrue(recorder.wait(timeout: 30) { !$0.isEmpty }, "nothing posted at unmount")
        XCTAssertEqual(recorder.events, ["unmounted"])
        XCTAssertEqual(recorder.names, [UIApplication.protectedDataWillBecomeUnavailableNotification])
        XCTAssertFalse(ProtectedData.isObserving)
    }

    func testDaemonDeathIsAnnounced() throws {
        let device = try MountedDevice()
        self.device = device
        guard let pid = device.daemonPID else { throw TestFailure("no daemon pid") }
        recorder.start()
        try ProtectedData.startObserving()
        XCTAssertEqual(kill(pid, SIGKILL), 0)
        XCTAssertTrue(recorder.wait(timeout: 30) { !$0.isEmpty }, "nothing posted when the daemon died")
        XCTAssertEqual(recorder.events, ["daemonGone"])
        XCTAssertFalse(ProtectedData.isObserving)
    }

    func testRestartWithoutAPasscodePostsNothing() throws {
        let device = try MountedDevice(passcode: false)
        self.device = device
        recorder.start()
        try ProtectedData.startObserving()
        try device.control.restart()
        XCTAssertTrue(UIApplication.shared.isProtectedDataAvailable)
        // The unmount's notification comes after anything the restart posted, on the
        // same stream: it marks the end of what there is to see.
        try device.run(["unmount", device.mountpoint])
        XCTAssertTrue(recorder.wait(timeout: 30) { $0.contains("unmounted") }, "\(recorder.events)")
        XCTAssertEqual(recorder.events, ["unmounted"])
    }

    /// A handler that holds the observing thread makes the subscriber fall behind, and
    /// the daemon drops it. The app hears the data go (`dropped`), then, subscribed again
    /// at once, the data come back, and later events as before.
    func testADroppedSubscriberSubscribesAgain() throws {
        let device = try MountedDevice()
        self.device = device
        guard let pid = device.daemonPID else { throw TestFailure("no daemon pid") }
        let release = DispatchSemaphore(value: 0)
        let holding = Mutex(true)
        let hold = NotificationCenter.default.addObserver(
            forName: UIApplication.protectedDataWillBecomeUnavailableNotification, object: nil, queue: nil) { _ in
            if holding.withLock({ first in defer { first = false }; return first }) { release.wait() }
        }
        defer {
            release.signal()
            NotificationCenter.default.removeObserver(hold)
        }
        try ProtectedData.startObserving()
        // The daemon starts a subscriber's writer once it has confirmed the subscription.
        XCTAssertTrue(Self.within(30) { Self.eventWriters(of: pid) == 1 }, "no event writer")
        // Restarts need no passcode and each sends an event: the first holds the thread.
        var restarts = 0
        while Self.eventWriters(of: pid) > 0 && restarts < 5000 {
            try device.control.restart()
            restarts += 1
        }
        XCTAssertEqual(Self.eventWriters(of: pid), 0, "still subscribed after \(restarts) restarts")
        try device.control.unlock(passcodeFile: device.passcodeFile)
        recorder.start()
        release.signal()
        XCTAssertTrue(recorder.wait(timeout: 60) { $0.contains("didBecomeAvailable") }, "\(recorder.events.suffix(3))")
        XCTAssertEqual(recorder.events.filter { $0 != "restart" }, ["dropped", "didBecomeAvailable"])
        XCTAssertEqual(recorder.names.last, UIApplication.protectedDataDidBecomeAvailableNotification)
        XCTAssertTrue(ProtectedData.isObserving)
        XCTAssertTrue(Self.within(30) { Self.eventWriters(of: pid) == 1 }, "subscribed again")
        recorder.reset()
        try device.control.lock()
        XCTAssertTrue(recorder.wait(timeout: 15) { !$0.isEmpty }, "no event after the new subscription")
        XCTAssertEqual(recorder.events, ["willBecomeUnavailable"])
    }

    private static func within(_ seconds: Double, _ condition: () -> Bool) -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while !condition() {
            if Date() >= deadline { return false }
            Thread.sleep(forTimeInterval: 0.02)
        }
        return true
    }

    /// The daemon's event writers: one thread per subscriber, named so.
    private static func eventWriters(of pid: Int32) -> Int {
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task")) ?? []
        return tasks.filter { task in
            (try? String(contentsOfFile: "/proc/\(pid)/task/\(task)/comm", encoding: .utf8))?
                .trimmingCharacters(in: .whitespacesAndNewlines) == "dpfs-events"
        }.count
    }

    func testHandlersRunOnTheNamedObservingThread() throws {
        let device = try MountedDevice()
        self.device = device
        try device.control.unlock(passcodeFile: device.passcodeFile)
        recorder.start()
        try ProtectedData.startObserving()
        try device.control.lock()
        XCTAssertTrue(recorder.wait(timeout: 15) { !$0.isEmpty })
        XCTAssertEqual(recorder.threadNames, ["dpfs-protected"])
    }
}

/// Records the protected-data notifications posted on the default center: their
/// `dpfsEvent`, name and the thread they were posted on. Started and stopped by the
/// test's thread; the notifications come on the observing thread.
private final class NotificationRecorder {
    private let seen = SeenNotifications()
    private var tokens: [NSObjectProtocol] = []

    var events: [String] { seen.snapshot.events }
    var names: [Notification.Name] { seen.snapshot.names }
    var threadNames: [String] { seen.snapshot.threadNames }

    func start() {
        let names: [Notification.Name] = [UIApplication.protectedDataWillBecomeUnavailableNotification,
                                          UIApplication.protectedDataDidBecomeAvailableNotification]
        for name in names {
            tokens.append(NotificationCenter.default.addObserver(forName: name, object: nil, queue: nil) { [seen] note in
                seen.record(note)
            })
        }
    }

    func reset() { seen.reset() }

    func stop() {
        for token in tokens { NotificationCenter.default.removeObserver(token) }
        tokens = []
    }

    /// Whether `condition` held of the events within `timeout` seconds.
    func wait(timeout: Double, until condition: ([String]) -> Bool) -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        while !condition(events) {
            if Date() >= deadline { return false }
            Thread.sleep(forTimeInterval: 0.02)
        }
        return true
    }
}

private final class SeenNotifications: Sendable {
    struct Snapshot: Sendable {
        var events: [String] = []
        var names: [Notification.Name] = []
        var threadNames: [String] = []
    }

    private let state = Mutex(Snapshot())

    var snapshot: Snapshot { state.withLock { $0 } }

    func record(_ note: Notification) {
        let event = note.userInfo?[ProtectedDataNotificationKey.event] as? String ?? "?"
        let thread = Thread.current.name ?? ""
        state.withLock {
            $0.events.append(event)
            $0.names.append(note.name)
            $0.threadNames.append(thread)
        }
    }

    func reset() { state.withLock { $0 = Snapshot() } }
}
