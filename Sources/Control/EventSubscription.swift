// One `events` subscriber's queue between the lock-state manager and its socket. The
// lock, unlock and restart post their events here without waiting: a bounded queue per
// subscriber, written out by a thread of its own. A subscriber that stops reading
// (stopped, paused in a debugger, slow) fills its socket, then its queue, and is then
// dropped, its connection shut down; nothing it does or fails to do delays the device.
import CLinux
import DataProtection
import Foundation
import Glibc
import Synchronization

final class EventSubscription: Sendable {
    /// Events a subscriber may fall behind by beyond what its socket buffer holds (a few
    /// hundred more): far more than a reader that reads ever needs.
    static let capacity = 64

    private struct State {
        var pending: [DeviceEvent] = []
        /// Fell behind by more than `capacity`; its connection is shut down.
        var dropped = false
        /// The subscription ended; the descriptor may be closed and reused.
        var ended = false
    }

    private let fd: Int32
    private let state = Mutex(State())
    private let ready = DispatchSemaphore(value: 0)

    init(fd: Int32) { self.fd = fd }

    /// Queues `event`; never blocks. A full queue drops the subscriber: its connection
    /// is shut down, which also wakes its writer from a send that waits for room.
    func post(_ event: DeviceEvent) {
        let wake = state.withLock { state -> Bool in
            guard !state.ended, !state.dropped else { return false }
            guard state.pending.count < Self.capacity else {
                state.dropped = true
                state.pending.removeAll()
                shutdown(fd, Int32(SHUT_RDWR))
                return true
            }
            state.pending.append(event)
            return true
        }
        if wake { ready.signal() }
    }

    /// Writes queued events to the socket, in order, until the subscription ends, the
    /// subscriber is dropped or a write fails; then shuts the connection down, which
    /// ends the wait for the subscriber's hang-up (`awaitHangUp`).
    func writeEvents() {
        defer { shutDown() }
        while true {
            ready.wait()
            let (batch, stop) = state.withLock { state -> ([DeviceEvent], Bool) in
                defer { state.pending.removeAll() }
                return (state.pending, state.ended || state.dropped)
            }
            if stop { return }
            for event in batch {
                guard let body = try? ControlCoding.encode(ControlReply(ok: true, event: event)) else { continue }
                do { try ServerFrame(body: body).write(to: fd) } catch { return }
            }
        }
    }

    /// Blocks until the subscriber hangs up or the connection is shut down.
    func awaitHangUp() {
        var byte: UInt8 = 0
        var noTimeout = timeval(tv_sec: 0, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &noTimeout, socklen_t(MemoryLayout<timeval>.size))
        while true {
            let n = recv(fd, &byte, 1, 0)
            if n > 0 || (n < 0 && errno == EINTR) { continue }
            return
        }
    }

    /// Ends the subscription and wakes its writer from any send.
    func end() {
        shutDown()
        ready.signal()
    }

    private func shutDown() {
        state.withLock { state in
            state.ended = true
            shutdown(fd, Int32(SHUT_RDWR))
        }
    }
}
