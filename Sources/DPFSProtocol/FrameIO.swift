// The system calls under a frame's reads and writes, and its header's bytes. Apart
// from Frame, which is generic over its secrets' type, so that they run specialized
// wherever a frame is read or sent: a generic type's methods called from another
// module (the daemon's Frame<SecureBuffer>) run unspecialized, looking up the type's
// metadata and witnesses at every array made and every step.
import CLinux
import Glibc

enum FrameIO {
    /// The limits a reader holds a frame to (FrameLengths).
    static func checkSize(body: Int, secrets: Int) throws {
        guard body <= ControlProtocol.maxBodySize else { throw FrameError.tooLarge(body) }
        guard secrets <= ControlProtocol.maxSecretSize else { throw FrameError.tooLarge(secrets) }
    }

    static func header(body: Int, secrets: Int) -> [UInt8] {
        var header = [UInt8](repeating: 0, count: ControlProtocol.headerSize)
        for (index, byte) in ControlProtocol.magic.enumerated() { header[index] = byte }
        header[4] = UInt8(ControlProtocol.version >> 8)
        header[5] = UInt8(ControlProtocol.version & 0xff)
        for shift in 0..<4 {
            header[8 + shift] = UInt8(truncatingIfNeeded: UInt32(body) >> (24 - 8 * shift))
            header[12 + shift] = UInt8(truncatingIfNeeded: UInt32(secrets) >> (24 - 8 * shift))
        }
        return header
    }

    /// Frame.sendWithoutWaiting's: header and body in one gathered send, copied together
    /// only when the socket did not take them whole.
    static func sendWithoutWaiting(body: [UInt8], to fd: Int32) throws -> ArraySlice<UInt8> {
        try checkSize(body: body.count, secrets: 0)
        let header = header(body: body.count, secrets: 0)
        let sent = try header.withUnsafeBytes { headerBytes in
            try body.withUnsafeBytes { bodyBytes in
                var vectors = [headerBytes, bodyBytes].map {
                    iovec(iov_base: UnsafeMutableRawPointer(mutating: $0.baseAddress), iov_len: $0.count)
                }
                return try vectors.withUnsafeMutableBufferPointer { vectors in
                    var message = msghdr()
                    message.msg_iov = vectors.baseAddress
                    message.msg_iovlen = bodyBytes.count > 0 ? 2 : 1
                    while true {
                        let n = sendmsg(fd, &message, Int32(MSG_DONTWAIT) | Int32(MSG_NOSIGNAL))
                        if n >= 0 { return n }
                        if errno == EAGAIN || errno == EWOULDBLOCK { return 0 }
                        if errno != EINTR { throw FrameError.io(errno) }
                    }
                }
            }
        }
        if sent == header.count + body.count { return [] }
        return (header + body)[sent...]
    }

    /// Frame.read's header and body, and when the read began (its secrets come next).
    static func readBody(from fd: Int32, polling window: Duration, while worthPolling: () -> Bool,
                         arrived: Bool, lengths peeked: FrameLengths?) throws
        -> (lengths: FrameLengths, body: [UInt8], deadline: FrameDeadline) {
        var peeked = peeked
        if !arrived && peeked == nil {
            let polled = window > .zero ? awaitData(fd, upTo: window, while: worthPolling) : (came: false, lengths: nil)
            if !polled.came { try awaitInput(fd, until: FrameDeadline.receiveTimeout(fd).map { ContinuousClock.now + $0 }) }
            peeked = polled.lengths
        }
        var deadline = FrameDeadline()
        var header = [UInt8](repeating: 0, count: ControlProtocol.headerSize)
        let lengths: FrameLengths
        var body: [UInt8]
        if let peeked {
            // Peeked all queued (`arrived`), the body is there to take at once; else its first part.
            body = [UInt8](repeating: 0, count: arrived ? peeked.body : min(peeked.body, firstPartSize))
            try header.withUnsafeMutableBytes { header in
                try body.withUnsafeMutableBytes { try readAll(fd, [header, $0], deadline: &deadline) }
            }
            lengths = try header.withUnsafeBytes(FrameLengths.init(header:))
            guard lengths == peeked else { throw FrameError.malformed("the frame changed after its header was peeked") }
        } else {
            try header.withUnsafeMutableBytes { try readAll(fd, [$0], deadline: &deadline) }
            lengths = try header.withUnsafeBytes(FrameLengths.init(header:))
            body = [UInt8](repeating: 0, count: min(lengths.body, firstPartSize))
            try body.withUnsafeMutableBytes { try readAll(fd, [$0], deadline: &deadline, begun: true) }
        }
        try readRest(of: &body, length: lengths.body, from: fd, deadline: &deadline)
        return (lengths, body, deadline)
    }

    /// How much of a body is read before more memory is taken for the rest.
    static var firstPartSize: Int { 64 << 10 }

    /// Reads the rest of a body of `length` bytes whose first `body.count` are in
    /// `body`, growing it as the bytes come: each step at most doubles what has come.
    static func readRest(of body: inout [UInt8], length: Int, from fd: Int32,
                                 deadline: inout FrameDeadline) throws {
        while body.count < length {
            let filled = body.count
            let grown = min(length, max(2 * filled, filled + firstPartSize))
            body.reserveCapacity(grown)
            body.append(contentsOf: repeatElement(0, count: grown - filled))
            try body.withUnsafeMutableBytes { all in
                try readAll(fd, [UnsafeMutableRawBufferPointer(rebasing: all[filled...])], deadline: &deadline, begun: true)
            }
        }
    }

    /// Polls the socket for up to `limit` before the caller blocks on it. A reply (or
    /// the next request of a busy client) usually comes within tens of microseconds; a
    /// thread that sleeps for it instead pays a wake-up from an idle CPU, which on a
    /// virtual machine costs more than the work it waited for (SocketPolling says when).
    /// It stops as soon as `worthPolling` fails: another caller has work for the CPU.
    /// Says whether data (or an end) came while it polled, and the frame's lengths when
    /// its whole header came (and passed its checks).
    static func awaitData(_ fd: Int32, upTo limit: Duration, while worthPolling: () -> Bool)
        -> (came: Bool, lengths: FrameLengths?) {
        var header = [UInt8](repeating: 0, count: ControlProtocol.headerSize)
        var peeked = 0
        let came = SocketPolling.poll(upTo: limit, while: worthPolling) {
            peeked = recv(fd, &header, header.count, Int32(MSG_PEEK) | Int32(MSG_DONTWAIT))
            return peeked >= 0 || (errno != EAGAIN && errno != EINTR)
        }
        guard came, peeked == header.count else { return (came, nil) }
        return (came, header.withUnsafeBytes { try? FrameLengths(header: $0) })
    }

    /// Sleeps until `fd` has input (or an end, or an error, which the read then meets);
    /// throws FrameError.io(EAGAIN), as recv(2) would, once `deadline` passes without
    /// any. Not in recv(2): a thread asleep there is also woken each time the peer
    /// takes in what this side sent last (the kernel's write-space wake-up reaches
    /// every sleeper on the socket), which is once per call, a switch in and out for
    /// nothing. poll(2) sleeps for input alone.
    static func awaitInput(_ fd: Int32, until deadline: ContinuousClock.Instant?) throws {
        var entry = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        while true {
            let wait = deadline.map { Int32(min(max(($0 - .now) / .milliseconds(1), 0) + 1, Double(Int32.max))) } ?? -1
            let ready = poll(&entry, 1, wait)
            if ready > 0 { return }
            if ready < 0 && errno != EINTR { return }  // the read meets the error itself
            if let deadline, ContinuousClock.now >= deadline { throw FrameError.io(EAGAIN) }
        }
    }

    static func bigEndian(_ value: UInt32) -> [UInt8] {
        [UInt8(value >> 24), UInt8(value >> 16 & 0xff), UInt8(value >> 8 & 0xff), UInt8(value & 0xff)]
    }

    /// Writes `parts` in order with sendmsg, resuming after a partial write.
    static func writeAll(_ fd: Int32, _ parts: [UnsafeRawBufferPointer]) throws {
        var pending = IOVectors(parts.map { UnsafeMutableRawBufferPointer(mutating: $0) })
        while !pending.isEmpty {
            let n = pending.withMessage { sendmsg(fd, &$0, Int32(MSG_NOSIGNAL)) }
            if n < 0 { if errno == EINTR { continue }; throw FrameError.io(errno) }
            pending.consume(n)
        }
    }

    /// Fills `parts` in order with recvmsg, resuming after a partial read, waiting for
    /// more in poll(2) until `deadline`. An end before any byte of the frame (`begun`
    /// false, nothing read here) is the connection closing; after one, a frame cut short.
    static func readAll(_ fd: Int32, _ parts: [UnsafeMutableRawBufferPointer], deadline: inout FrameDeadline,
                        begun: Bool = false) throws {
        var pending = IOVectors(parts)
        var done = 0
        while !pending.isEmpty {
            let n = pending.withMessage { recvmsg(fd, &$0, Int32(MSG_DONTWAIT)) }
            if n < 0 {
                if errno == EINTR { continue }
                if errno == EAGAIN || errno == EWOULDBLOCK { try awaitInput(fd, until: deadline.instant(for: fd)); continue }
                throw FrameError.io(errno)
            }
            if n == 0 { throw begun || done > 0 ? FrameError.malformed(FrameError.truncatedFrame) : FrameError.closed }
            done += n
            pending.consume(n)
        }
    }
}

/// The buffers a gathered write or a scattered read has still to do, as iovecs.
private struct IOVectors {
    private var vectors: [iovec]
    private var first = 0

    init(_ parts: [UnsafeMutableRawBufferPointer]) {
        vectors = parts.filter { $0.count > 0 }.map { iovec(iov_base: $0.baseAddress, iov_len: $0.count) }
    }

    var isEmpty: Bool { first == vectors.count }

    /// Calls `body` with a message whose iovecs are the pending ones.
    mutating func withMessage(_ body: (inout msghdr) -> Int) -> Int {
        vectors[first...].withUnsafeMutableBufferPointer { pending in
            var message = msghdr()
            message.msg_iov = pending.baseAddress
            message.msg_iovlen = pending.count
            return body(&message)
        }
    }

    /// Marks the first `count` pending bytes done.
    mutating func consume(_ count: Int) {
        var left = count
        while first < vectors.count && left >= vectors[first].iov_len {
            left -= vectors[first].iov_len
            first += 1
        }
        if left > 0 {
            vectors[first].iov_base += left
            vectors[first].iov_len -= left
        }
    }
}
