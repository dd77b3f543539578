// The long-lived requests, each on the thread of the worker that took it, released from
// the pool: app sessions, which last as long as the connection that opened them,
// however quiet, and an events stream.
import CLinux
import DPFSProtocol
import Foundation
import Glibc

extension ControlServer {
    /// An owner's connection that opens app sessions (`dpfs run`): served on this thread
    /// until it closes, which ends the sessions. It may open more and send other requests.
    func serveSessions(opening first: (bundleID: String?, deviceControl: Bool), on connection: ControlConnection) {
        var sessions = AppSessions()
        defer {
            sessions.end()
            appRuns.remove(connection: connection.id)
        }
        var forever = timeval(tv_sec: 0, tv_usec: 0)
        setsockopt(connection.fd, SOL_SOCKET, SO_RCVTIMEO, &forever, socklen_t(MemoryLayout<timeval>.size))
        var opening: (bundleID: String?, deviceControl: Bool)? = first
        while true {
            if let (bundleID, deviceControl) = opening {
                guard send(open(bundleID, deviceControl: deviceControl, into: &sessions, on: connection),
                           on: connection) == .keep else { return }
            }
            let frame: ServerFrame
            do { frame = try ServerFrame.read(from: connection.fd) } catch {
                _ = readFailed(error, on: connection)
                return
            }
            if case .appSession(let bundleID, let deviceControl)? = try? ControlCoding.decode(ControlRequest.self, frame.body) {
                opening = (bundleID, deviceControl)
                continue
            }
            opening = nil
            guard respond(to: frame, on: connection) == .keep else { return }
        }
    }

    /// Opens a session for `bundleID` unless an unmount is under way; the connection's
    /// first is recorded as a run of the process at its other end (pid 0 where its pid
    /// cannot be read), under the name the caller gave until the session names the app.
    private func open(_ bundleID: String?, deviceControl: Bool, into sessions: inout AppSessions,
                      on connection: ControlConnection) -> ControlReply {
        var pid: pid_t = 0
        var uid: uid_t = 0
        if dpfs_peer_credentials(connection.fd, &pid, &uid) != 0 { pid = 0 }
        let admission = appRuns.admit(AppRun(pid: pid, app: bundleID ?? "the sandbox's app"), connection: connection.id)
        guard admission != .refused else { return .failure(Self.unmountingRefusal) }
        let reply = sessions.open(for: bundleID, deviceControl: deviceControl, server: self)
        if admission == .first {
            if let app = reply.app, reply.ok { appRuns.name(app, connection: connection.id) }
            else { appRuns.remove(connection: connection.id) }
        }
        return reply
    }

    static let unmountingRefusal = "the sandbox is being unmounted (dpfs unmount): no app session opens now; "
        + "if the unmount fails, try again"

    /// An owner's unmount (`dpfs unmount`): the reply lists the app runs open, and if
    /// there are none no app session opens until this connection closes, which the
    /// unmount holds open until its detach is done or has failed.
    func serveUnmounting(on connection: ControlConnection) {
        var reply = ControlReply(ok: true)
        let runs = appRuns.beginUnmount()
        reply.runs = runs
        guard runs.isEmpty else {
            _ = send(reply, on: connection)
            return
        }
        defer { appRuns.endUnmount() }
        guard send(reply, on: connection) == .keep else { return }
        var forever = timeval(tv_sec: 0, tv_usec: 0)
        setsockopt(connection.fd, SOL_SOCKET, SO_RCVTIMEO, &forever, socklen_t(MemoryLayout<timeval>.size))
        while true {
            let frame: ServerFrame
            do { frame = try ServerFrame.read(from: connection.fd) } catch {
                _ = readFailed(error, on: connection)
                return
            }
            guard respond(to: frame, on: connection) == .keep else { return }
        }
    }

    /// Streams events until the subscriber hangs up or is dropped for falling behind
    /// (EventSubscription): the device posts to the subscription's queue and never
    /// waits for this socket.
    func streamEvents(_ fd: Int32) {
        // A subscriber that stops reading is dropped when its queue overflows, never
        // for the time its socket stays full.
        var forever = timeval(tv_sec: 0, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &forever, socklen_t(MemoryLayout<timeval>.size))
        let subscription = EventSubscription(fd: fd)
        let id = device.observe { subscription.post($0) }
        reply(fd, ControlReply(ok: true, message: "subscribed", status: device.status()))
        let writerDone = DispatchSemaphore(value: 0)
        // Tests count a daemon's subscribers by the writers' name.
        do throws(PosixThread.StartError) {
            try PosixThread.start(named: "dpfs-events") {
                subscription.writeEvents()
                writerDone.signal()
            }
        } catch {
            // The stream ends at once; the subscriber sees its end.
            log("events: \(error); a subscriber was let go")
            device.stopObserving(id)
            subscription.end()
            return
        }
        subscription.awaitHangUp()
        device.stopObserving(id)
        subscription.end()
        // The caller closes the descriptor: the writer must be done with it first.
        writerDone.wait()
    }

    /// Sends `reply` whole, waiting for room as needed.
    func reply(_ fd: Int32, _ reply: ControlReply) {
        guard let body = try? ControlCoding.encode(reply) else { return }
        try? ServerFrame(body: body).write(to: fd)
    }
}
