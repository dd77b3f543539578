// How a worker serves one connection's turn: reads its request once the whole frame is
// there, answers it and sends the reply without waiting for room. Whatever may wait on
// the client or take a while is done after `releaseWorker()`, off the pool: a frame
// still arriving, a reply the client is slow to take, a malformed frame's clean ending,
// a passcode's key derivation, the sync server, and the long-lived requests (an
// events stream, a keychain export, app sessions; ControlServer+Sessions). Where no
// thread can take the worker's place and it is its pool's last one free, what would
// wait on a client is turned away instead (a passcode's key derivation, bounded, is
// done all the same). A reply the client has not taken within `replyDeadline` is
// abandoned with its connection: a client that never read held a thread and the
// reply's memory for as long as it lived.
import DPFSProtocol
import Foundation
import Glibc

extension ControlServer {
    /// A worker's turn on `connection`, whose socket woke, or on which the worker's poll
    /// saw `peeked` arrive.
    func serveReady(_ connection: ControlConnection, peeked: FrameArrival?) -> ControlWorkers.Disposition {
        // A whole frame stays whole; what was partial (or ended) is looked at afresh.
        var arrival = peeked ?? .nothing
        if case .whole = arrival {} else { arrival = FrameArrival.peek(connection.fd, into: connection.peekBuffer) }
        var lengths: FrameLengths?
        switch arrival {
        case .closed: return .close
        case .nothing: return .keep
        case .partial:
            // The rest may take the client any time.
            guard releaseWorker() else { return turnAway(connection) }
        case .whole(let peeked): lengths = peeked
        }
        let frame: ServerFrame
        do { frame = try ServerFrame.read(from: connection.fd, arrived: arrival != .partial, lengths: lengths) } catch {
            return readFailed(error, on: connection)
        }
        return respond(to: frame, on: connection)
    }

    /// After a frame could not be read: a closed connection ends; anything else gets an
    /// error reply, and the connection, out of step, is ended cleanly.
    func readFailed(_ error: any Error, on connection: ControlConnection) -> ControlWorkers.Disposition {
        if case FrameError.closed = error { return .close }
        guard releaseWorker() else {
            sendAtOnce(.failure("\(error)"), to: connection.fd)
            return .close
        }
        _ = send(.failure("\(error)"), on: connection)
        drain(connection.fd)
        return .close
    }

    /// Answers the request `frame` carries.
    func respond(to frame: ServerFrame, on connection: ControlConnection) -> ControlWorkers.Disposition {
        defer { served?() }
        let request: ControlRequest
        do { request = try ControlCoding.decode(ControlRequest.self, frame.body) } catch {
            return send(.failure(MalformedRequest.message(for: error)), on: connection)
        }
        if let refusal = connection.scope.refusal(of: request) {
            return send(.failure(refusal), on: connection)
        }
        switch request {
        case .events:
            guard releaseWorker() else { return turnAway(connection) }
            streamEvents(connection.fd)
            return .close
        case .keychainExport:
            guard releaseWorker() else { return turnAway(connection) }
            KeychainExport.stream(items, device: device, to: connection.fd)
            return .keep
        case .appSession(let bundleID, let deviceControl):
            guard releaseWorker() else { return turnAway(connection) }
            serveSessions(opening: (bundleID, deviceControl), on: connection)
            return .close
        case .unmounting:
            guard releaseWorker() else { return turnAway(connection) }
            serveUnmounting(on: connection)
            return .close
        case .sync:
            guard releaseWorker() else { return turnAway(connection) }
            return answer(request, frame, on: connection)
        default:
            // A key derivation is work, not a wait: done in place where it must be.
            if request.takesAWhile { _ = releaseWorker() }
            return answer(request, frame, on: connection)
        }
    }

    /// Answers an ordinary request: one reply.
    private func answer(_ request: ControlRequest, _ frame: ServerFrame, on connection: ControlConnection)
        -> ControlWorkers.Disposition {
        SocketPolling.begin(connection: connection.id)
        defer { SocketPolling.end() }
        let fd = connection.fd
        let handler = RequestHandler(device: device, items: items, scope: connection.scope, sync: sync,
                                     lockFollowing: lockFollowing, appRuns: appRuns, requesterGone: { Self.hungUp(fd) })
        return send(handler.handle(request, secrets: frame.secrets), on: connection)
    }

    /// Sends `reply` as far as the socket takes it at once; the rest, for a client slow
    /// to read, off the pool, by `replyDeadline`.
    func send(_ reply: ControlReply, on connection: ControlConnection) -> ControlWorkers.Disposition {
        guard let body = try? ControlCoding.encode(reply) else { return .close }
        do {
            let rest = try ServerFrame(body: body).sendWithoutWaiting(to: connection.fd)
            if !rest.isEmpty {
                guard releaseWorker() else { return .close }
                try Self.send(rest, to: connection.fd, by: .now + Self.replyDeadline)
            }
            return .keep
        } catch {
            return .close
        }
    }

    /// How long a client has to take a reply, from when it began: as long as a
    /// connection may stay quiet.
    static let replyDeadline = ControlWorkers.idleLimit

    /// Sends `rest` as the client takes it, by `deadline`; throws FrameError.io(ETIMEDOUT)
    /// once it passes.
    static func send(_ rest: ArraySlice<UInt8>, to fd: Int32, by deadline: ContinuousClock.Instant) throws {
        var rest = rest
        while !rest.isEmpty {
            let sent = rest.withUnsafeBytes {
                Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT) | Int32(MSG_NOSIGNAL))
            }
            if sent > 0 {
                rest = rest.dropFirst(sent)
                continue
            }
            guard sent < 0, errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR else {
                throw FrameError.io(sent < 0 ? errno : EPIPE)
            }
            let left = deadline - .now
            guard left > .zero else { throw FrameError.io(ETIMEDOUT) }
            var room = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
            _ = poll(&room, 1, Int32(min(left / .milliseconds(1) + 1, 60_000)))
        }
    }

    /// Where no thread is free to wait on this client: a short error reply, as far as the
    /// socket takes it at once, and the connection ends.
    func turnAway(_ connection: ControlConnection) -> ControlWorkers.Disposition {
        sendAtOnce(.failure("the daemon cannot start a thread for this now (too many threads?): try again"), to: connection.fd)
        return .close
    }

    /// Sends `reply` as far as the socket takes it at once, and no further.
    func sendAtOnce(_ reply: ControlReply, to fd: Int32) {
        guard let body = try? ControlCoding.encode(reply) else { return }
        _ = try? ServerFrame(body: body).sendWithoutWaiting(to: fd)
    }

    /// Whether the client closed its end: a client waits for its reply and sends
    /// nothing meanwhile, so only its exit or interruption makes the socket hang up.
    static func hungUp(_ fd: Int32) -> Bool {
        var byte: UInt8 = 0
        let peeked = recv(fd, &byte, 1, Int32(MSG_PEEK | MSG_DONTWAIT))
        return peeked == 0 || (peeked < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
    }

    /// Reads and drops what the peer still sends (briefly), so closing does not reset
    /// the connection before the peer has read the error reply. What is left of a frame
    /// that failed part way may be its secrets, so it is read into locked memory, zeroed
    /// when released.
    func drain(_ fd: Int32) {
        shutdown(fd, Int32(SHUT_WR))
        var timeout = timeval(tv_sec: 1, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        let scratch = LockedSecret(count: 4096)
        var budget = 1 << 20
        while budget > 0 {
            let n = recv(fd, scratch.mutableBytes.baseAddress, scratch.count, 0)
            if n <= 0 { return }
            budget -= n
        }
    }
}

extension ControlRequest {
    /// Requests that keep a thread busy for a while: a passcode's key derivation. (The
    /// sync server's answers, which may take any time, release their worker apart; a
    /// prompt for the user releases its worker itself.)
    var takesAWhile: Bool {
        switch self {
        case .unlock, .passcode: return true
        default: return false
        }
    }
}
