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
