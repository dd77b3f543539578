// Turns the daemon's event stream into protected-data notifications on
// NotificationCenter.default: one background thread holds an `events` connection and
// posts as events arrive. willBecomeUnavailable and restart (the data goes away) post the
// will-become-unavailable notification; didBecomeAvailable posts the did-become one.
import DPFSProtocol
import Foundation
import Synchronization

final class ProtectedDataObserver: Sendable {
    static let shared = ProtectedDataObserver()

    /// The live subscription; a new generation makes an old thread stop posting.
    private struct Subscription: Sendable {
        var connection: EventConnection?
        var generation = 0
    }

    private let subscription = Mutex(Subscription())

    var isObserving: Bool { subscription.withLock { $0.connection != nil } }

    func start(mountpoint: String) throws {
        if isObserving { return }
        let timeout = DeviceChannel.requestTimeout
        let connection: EventConnection
        do {
            connection = EventConnection(try ControlClient(mountpoint: mountpoint, timeout: timeout))
            connection.client.setTimeout(seconds: timeout)
        } catch {
            throw DeviceChannel.translate(error, mountpoint: mountpoint, timeout: timeout)
        }
        let generation = subscription.withLock { state -> Int in
            state.connection?.client.hangUp()
            state.connection = connection
            state.generation += 1
            return state.generation
        }
        let started = StartOutcome()
        let thread = Thread { [self] in
            run(connection, generation: generation, started: started)
        }
        thread.name = "dpfs-protected-data"
        thread.start()
        started.ready.wait()
        if let error = started.error.withLock({ $0 }) {
            stop()
            throw DeviceChannel.translate(error, mountpoint: mountpoint, timeout: timeout)
        }
    }

    func stop() {
        subscription.withLock { state in
            state.connection?.client.hangUp()
            state.connection = nil
            state.generation += 1
        }
    }

    private func run(_ connection: EventConnection, generation: Int, started: StartOutcome) {
        var subscribed = false
        do {
            try connection.client.stream(.events) { reply in
                if !subscribed {
                    // The first reply confirms the subscription; events may then be
                    // hours apart, so no time limit from here on.
                    subscribed = true
                    connection.client.setTimeout(seconds: 0)
                    started.ready.signal()
                    return true
                }
                guard isCurrent(generation) else { return false }
                if let event = reply.event { Self.post(event) }
                return true
            }
            if !subscribed { started.error.withLock { $0 = FrameError.closed } }
        } catch {
            if !subscribed { started.error.withLock { $0 = error } }
        }
        if !subscribed { started.ready.signal() }
        subscription.withLock { state in
            if state.generation == generation { state.connection = nil }
        }
    }

    private func isCurrent(_ generation: Int) -> Bool {
        subscription.withLock { $0.generation == generation }
    }

    static func post(_ event: DeviceEvent) {
        let name: Notification.Name
        switch event.event {
        case .willBecomeUnavailable, .restart: name = .UIApplicationProtectedDataWillBecomeUnavailable
        case .didBecomeAvailable: name = .UIApplicationProtectedDataDidBecomeAvailable
        default: return
        }
        NotificationCenter.default.post(name: name, object: UIApplication.shared, userInfo: [
            ProtectedDataNotificationKey.event: event.event.rawValue,
            ProtectedDataNotificationKey.state: DeviceState(event.state).rawValue,
        ])
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
