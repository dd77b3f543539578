// Turns the daemon's event stream into protected-data notifications on
// NotificationCenter.default: one background thread holds an `events` connection and
// posts as events arrive. willBecomeUnavailable and restart (the data goes away) post the
// will-become-unavailable notification; didBecomeAvailable posts the did-become one. A
// stream that ends without stopObserving (the daemon died, the device was unmounted)
// posts will-become-unavailable too: the mount refuses every access from then on, and
// on iOS protected data never goes away unannounced. A subscriber the daemon dropped
// subscribes again, as an iOS app never stops hearing.
import DPFSProtocol
import Foundation
import Glibc
import Synchronization

final class ProtectedDataObserver: Sendable {
    static let shared = ProtectedDataObserver()

    /// The observing thread's name: the kernel keeps 15 bytes of a thread's name, and
    /// Foundation on Linux reads `Thread.current.name` from there.
    static let threadName = "dpfs-protected"

    /// The live subscription; a new generation makes an old thread stop posting.
    private struct Subscription: Sendable {
        var connection: EventConnection?
        var generation = 0
    }

    private let subscription = Mutex(Subscription())
    /// Held through a whole start, so that concurrent starts make one subscription: the
    /// first subscribes, the others wait for it and find it live.
    private let starting = Mutex(())

    var isObserving: Bool { subscription.withLock { $0.connection != nil } }

    func start(mountpoint: String) throws {
        try starting.withLock { _ throws in
            if isObserving { return }
            try subscribe(mountpoint: mountpoint)
        }
    }

    func stop() {
        subscription.withLock { state in
            state.connection?.client.hangUp()
            state.connection = nil
            state.generation += 1
        }
    }

    /// Connects, starts the observing thread and returns once the daemon confirmed the
    /// subscription. Caller holds `starting`.
    private func subscribe(mountpoint: String) throws {
        let timeout = DeviceChannel.requestTimeout
        let connection: EventConnection
        do {
            connection = try Self.connect(mountpoint)
        } catch {
            throw DeviceChannel.translate(error, mountpoint: mountpoint, timeout: timeout)
        }
        let generation = subscription.withLock { state -> Int in
            state.connection = connection
            state.generation += 1
            return state.generation
        }
        let started = StartOutcome()
        // Resolved while the daemon answers: a dead one's mountpoint resolves no more.
        let resolved = Self.resolved(mountpoint)
        do throws(PosixThread.StartError) {
            try PosixThread.start(named: Self.threadName) { [self] in
                run(connection, mountpoint: resolved, generation: generation, started: started)
            }
        } catch {
            connection.client.hangUp()
            end(generation)
            throw DeviceError.unreachable(mountpoint: mountpoint, reason: "\(error)")
        }
        started.ready.wait()
        if let error = started.error.withLock({ $0 }) {
            end(generation)
            throw DeviceChannel.translate(error, mountpoint: mountpoint, timeout: timeout)
        }
    }

    /// A connection for an `events` subscription, with the request deadline until it is confirmed.
    private static func connect(_ mountpoint: String) throws -> EventConnection {
        let timeout = DeviceChannel.requestTimeout
        let connection = EventConnection(try ControlClient(mountpoint: mountpoint, timeout: timeout))
        connection.client.setTimeout(seconds: timeout)
        return connection
    }

    /// Forgets the subscription of `generation` if it is still the live one; true if it
    /// was (nobody stopped it or replaced it).
    @discardableResult
    private func end(_ generation: Int) -> Bool {
        subscription.withLock { state in
            guard state.generation == generation else { return false }
            state.connection = nil
            return true
        }
    }

    /// The observing thread: posts the stream's events until it ends. A subscriber the
    /// daemon dropped for falling behind has missed events: that is announced as the
    /// data gone, and the thread subscribes again at once, announcing the data back
    /// if it is available then, so that the app goes on hearing as it would on iOS.
    /// Only a subscription that brought events is taken again: one the daemon ends
    /// before any (short of threads to write them) ends observing, as does a failure to
    /// subscribe again, with the reason posted.
    private func run(_ connection: EventConnection, mountpoint: String, generation: Int, started: StartOutcome) {
        var failure: Error?
        let first = listen(on: connection, generation: generation, failure: &failure) { _ in started.ready.signal() }
        guard first.confirmed else {
            started.error.withLock { $0 = failure ?? FrameError.closed }
            started.ready.signal()
            return
        }
        var brought = first.events > 0
        while isCurrent(generation) {
            let reason = Self.endReason(mountpoint)
            guard reason == .dropped, brought else {
                if end(generation) { Self.postStreamEnd(reason) }
                return
            }
            guard isCurrent(generation) else { return }
            Self.postStreamEnd(reason)
            guard let fresh = try? Self.connect(mountpoint), replace(generation, with: fresh) else {
                if end(generation) { Self.postStreamEnd(Self.endReason(mountpoint)) }
                return
            }
            let again = listen(on: fresh, generation: generation, failure: &failure) { [self] status in
                guard let status, status.classes[ProtectionClass.complete.name] == true, isCurrent(generation) else { return }
                Self.post(DeviceEvent(.didBecomeAvailable, state: status.state))
            }
            guard again.confirmed else {
                if end(generation) { Self.postStreamEnd(Self.endReason(mountpoint)) }
                return
            }
            brought = again.events > 0
        }
    }

    /// Subscribes on `connection` and posts its events while `generation` is the live
    /// subscription; `subscribed` gets the status the daemon confirmed the subscription
    /// with. Returns once the stream ends: whether it was confirmed (`failure` says why
    /// not) and how many events came.
    private func listen(on connection: EventConnection, generation: Int, failure: inout Error?,
                        subscribed: (DeviceStatus?) -> Void) -> (confirmed: Bool, events: Int) {
        var confirmed = false
        var events = 0
        do {
            try connection.client.stream(.events) { reply in
                if !confirmed {
                    // The first reply confirms the subscription; events may then be
                    // hours apart, so no time limit from here on.
                    confirmed = true
                    connection.client.setTimeout(seconds: 0)
                    subscribed(reply.status)
                    return true
                }
                events += 1
                guard isCurrent(generation) else { return false }
                if let event = reply.event { Self.post(event) }
                return true
            }
        } catch {
            failure = error
        }
        return (confirmed, events)
    }

    /// Makes `connection` the one of subscription `generation`, if that is still the
    /// live one; else hangs it up.
    private func replace(_ generation: Int, with connection: EventConnection) -> Bool {
        let live = subscription.withLock { state -> Bool in
            guard state.generation == generation else { return false }
            state.connection = connection
            return true
        }
        if !live { connection.client.hangUp() }
        return live
    }

    private func isCurrent(_ generation: Int) -> Bool {
        subscription.withLock { $0.generation == generation }
    }

    static func post(_ event: DeviceEvent) {
        let name: Notification.Name
        switch event.event {
        case .willBecomeUnavailable: name = .UIApplicationProtectedDataWillBecomeUnavailable
        // Without a passcode a restart wipes no key and leaves the device as it was:
        // nothing becomes unavailable, and iOS says nothing.
        case .restart where event.state == .beforeFirstUnlock: name = .UIApplicationProtectedDataWillBecomeUnavailable
        case .didBecomeAvailable: name = .UIApplicationProtectedDataDidBecomeAvailable
        default: return
        }
        NotificationCenter.default.post(name: name, object: UIApplication.shared, userInfo: [
            ProtectedDataNotificationKey.event: event.event.rawValue,
            ProtectedDataNotificationKey.state: DeviceState(event.state).rawValue,
        ])
    }

    private static func resolved(_ path: String) -> String {
        guard let resolved = realpath(path, nil) else { return path }
        defer { free(resolved) }
        return String(cString: resolved)
    }

    /// The stream ended unasked: the device is gone for this process (or, `dropped`, its
    /// events were missed), as protected data at a lock, and an app must drop what it
    /// decrypted. No state: nobody reports one.
    private static func postStreamEnd(_ reason: ProtectedDataEndReason) {
        NotificationCenter.default.post(name: .UIApplicationProtectedDataWillBecomeUnavailable,
                                        object: UIApplication.shared,
                                        userInfo: [ProtectedDataNotificationKey.event: reason.rawValue])
    }

    private static func endReason(_ mountpoint: String) -> ProtectedDataEndReason {
        guard MountTable.topmost(at: mountpoint)?.fsType == MountEntry.dpfsType else { return .unmounted }
        let answers = (try? DeviceChannel.send(.status, to: mountpoint, timeout: 2)) != nil
        return answers ? .dropped : .daemonGone
    }
}

/// The event connection, shared by the observing thread and whoever stops it.
private final class EventConnection: @unchecked Sendable {
    // @unchecked: the observing thread alone reads from the client; other threads only
    // call hangUp (a shutdown(2), safe from any thread).
    let client: ControlClient
    init(_ client: ControlClient) { self.client = client }
}

/// How the observing thread's subscription went: signalled once, with an error or none.
private final class StartOutcome: Sendable {
    let ready = DispatchSemaphore(value: 0)
    let error = Mutex<Error?>(nil)
}
