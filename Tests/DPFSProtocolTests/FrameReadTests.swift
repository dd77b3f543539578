// Reading frames off the control socket: whole with their secrets whichever way the
// reader learnt of them (a peek, a poll or a sleep), told whole or partial before they
// are read, and refused, never half-read, when cut short or not dpfs frames at all.
import DPFSProtocol
import Foundation
import Glibc
import Synchronization
import Testing

@Suite struct FrameReadTests {
    typealias TestFrame = Frame<LockedSecret>
    let scratch = LockedSecret(count: FrameArrival.peekSize)

    @Test func aPeekedFrameWithSecretsComesBackWhole() throws {
        let (client, daemon) = try connectedPair()
        defer { close(client); close(daemon) }
        let secrets = [secret("1234"), secret("a longer passcode")]
        try TestFrame(body: Array("change".utf8), secrets: secrets).write(to: client)

        guard case .whole(let lengths?) = peek(daemon) else {
            Issue.record("a frame sent whole was not told whole")
            return
        }
        #expect(lengths.body == 6)
        #expect(lengths.secrets == 4 + 4 + 4 + 17)
        #expect(scratch.bytes.allSatisfy { $0 == 0 }, "the peek left the secrets it copied in its buffer")
        let frame = try TestFrame.read(from: daemon, arrived: true, lengths: lengths)
        #expect(frame.body == Array("change".utf8))
        #expect(frame.secrets.map { Array($0.bytes) } == [Array("1234".utf8), Array("a longer passcode".utf8)])
        #expect(peek(daemon) == .nothing, "the read took more or less than its frame")
    }

    @Test func aPolledAndASleepingReadTakeOneFrameEach() throws {
        let (client, daemon) = try connectedPair()
        defer { close(client); close(daemon) }
        for body in ["first", "second"] { try TestFrame(body: Array(body.utf8)).write(to: client) }
        #expect(try TestFrame.read(from: daemon, polling: .milliseconds(100)).body == Array("first".utf8))
        #expect(try TestFrame.read(from: daemon).body == Array("second".utf8))
    }

    @Test func aFrameLargerThanThePeekIsWholeOnlyOnceAllOfItIsQueued() throws {
        let (client, daemon) = try connectedPair()
        defer { close(client); close(daemon) }
        let body = [UInt8](repeating: 7, count: 5000)
        let bytes = header(bodyLength: body.count) + body
        try send(bytes[..<3000], on: client)
        #expect(peek(daemon) == .partial)
        try send(bytes[3000...], on: client)
        guard case .whole(let lengths?) = peek(daemon) else {
            Issue.record("a frame all queued was not told whole")
            return
        }
        #expect(lengths.body == body.count && lengths.secrets == 0)
        #expect(try TestFrame.read(from: daemon, arrived: true).body == body)
    }

    @Test func aHeaderCutShortIsPartial() throws {
        let (client, daemon) = try connectedPair()
        defer { close(client); close(daemon) }
        try send(header(bodyLength: 4)[..<10], on: client)
        #expect(peek(daemon) == .partial)
    }

    @Test func aFrameThatIsNotDpfsIsToldWholeAndRefused() throws {
        let (client, daemon) = try connectedPair()
        defer { close(client); close(daemon) }
        try send(Array("GET / HTTP/1.1\r\n\r\n".utf8)[...], on: client)
        #expect(peek(daemon) == .whole(nil))
        #expect(throws: FrameError.self) { try TestFrame.read(from: daemon, arrived: true) }
    }

    @Test func aRefusedHeaderLeavesNoBytesOfTheFrameInThePeekBuffer() throws {
        let (client, daemon) = try connectedPair()
        defer { close(client); close(daemon) }
        var other = header(bodyLength: 4)
        other[5] = UInt8(ControlProtocol.version + 1)
        try send((other + Array("body".utf8) + Array("a passcode".utf8))[...], on: client)
        #expect(peek(daemon) == .whole(nil))
        #expect(scratch.bytes.allSatisfy { $0 == 0 }, "the peek kept what followed a header it refused")
    }

    @Test func aFrameCutShortIsMalformedAndAnEndBeforeOneIsClosed() throws {
        let (client, daemon) = try connectedPair()
        defer { close(client); close(daemon) }
        try send((header(bodyLength: 10) + Array("abc".utf8))[...], on: client)
        shutdown(client, Int32(SHUT_WR))
        do {
            _ = try TestFrame.read(from: daemon)
            Issue.record("a frame cut short was read")
        } catch FrameError.malformed {
        } catch { Issue.record("expected a malformed frame, got \(error)") }

        let (other, otherDaemon) = try connectedPair()
        defer { close(other); close(otherDaemon) }
        shutdown(other, Int32(SHUT_WR))
        #expect(peek(otherDaemon) == .closed)
        do {
            _ = try TestFrame.read(from: otherDaemon)
            Issue.record("a read after the end returned a frame")
        } catch FrameError.closed {
        } catch { Issue.record("expected the connection closed, got \(error)") }
    }

    @Test func aFrameThePeerWouldRefuseIsNeverSent() throws {
        // Sent, it would only make the peer drop the connection: the caller would take
        // that for a daemon that is gone.
        let (client, daemon) = try connectedPair()
        defer { close(client); close(daemon) }
        // Nobody reads: a write that does start fails in a second rather than hangs.
        var timeout = timeval(tv_sec: 1, tv_usec: 0)
        setsockopt(client, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        let body = [UInt8](repeating: 1, count: ControlProtocol.maxBodySize + 1)
        do {
            try TestFrame(body: body).write(to: client)
            Issue.record("a frame over the body limit was written")
        } catch FrameError.tooLarge(let size) {
            #expect(size == body.count)
        } catch { Issue.record("expected tooLarge, got \(error)") }
        let tooMuch = LockedSecret(count: ControlProtocol.maxSecretSize)
        #expect(throws: FrameError.self) { try TestFrame(body: [1], secrets: [tooMuch]).write(to: client) }
        #expect(peek(daemon) == .nothing, "part of a refused frame was written")
    }

    /// A sender that trickles its frame in, a byte at a time and never silent for as
    /// long as the reader's receive timeout, is given up on once that timeout has
    /// passed since the frame began: it would otherwise hold the reading thread for as
    /// long as it kept trickling.
    @Test func aTrickledFrameGetsOneDeadlineForAllOfIt() throws {
        let (client, daemon) = try connectedPair()
        defer { close(client); close(daemon) }
        var timeout = timeval(tv_sec: 0, tv_usec: 300_000)
        setsockopt(daemon, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        let body = [UInt8](repeating: 7, count: 60)
        try send(header(bodyLength: body.count)[...], on: client)
        let stop = Mutex(false)
        let sender = DispatchSemaphore(value: 0)
        Thread {
            for byte in body where !stop.withLock({ $0 }) {
                _ = withUnsafeBytes(of: byte) { Glibc.send(client, $0.baseAddress, 1, Int32(MSG_NOSIGNAL)) }
                usleep(50_000)
            }
            sender.signal()
        }.start()
        defer { stop.withLock { $0 = true }; sender.wait() }
        let started = ContinuousClock.now
        do {
            _ = try TestFrame.read(from: daemon, arrived: true)
            Issue.record("a frame trickled in over \(ContinuousClock.now - started) was read whole")
        } catch FrameError.io(let code) {
            #expect(code == EAGAIN)
        } catch { Issue.record("expected FrameError.io(EAGAIN), got \(error)") }
        #expect(ContinuousClock.now - started < .milliseconds(1500), "the reader waited well past its timeout")
    }

    // MARK: Helpers

    func peek(_ fd: Int32) -> FrameArrival { FrameArrival.peek(fd, into: scratch) }

    func secret(_ text: String) -> LockedSecret {
        Array(text.utf8).withUnsafeBytes { LockedSecret.copying($0) }
    }

    /// A frame header as dpfs(5) gives it, for a body of `bodyLength` and no secrets.
    func header(bodyLength: Int) -> [UInt8] {
        let length = UInt32(bodyLength)
        return ControlProtocol.magic + [0, UInt8(ControlProtocol.version), 0, 0]
            + [UInt8(length >> 24), UInt8(length >> 16 & 0xff), UInt8(length >> 8 & 0xff), UInt8(length & 0xff)]
            + [0, 0, 0, 0]
    }

    func send(_ bytes: ArraySlice<UInt8>, on fd: Int32) throws {
        let sent = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        try #require(sent == bytes.count)
    }
}
