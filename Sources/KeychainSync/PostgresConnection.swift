// One connection to the account's PostgreSQL server through libpq: parameterised
// statements in text format (bytea as PostgreSQL's hex form), LISTEN's notifications,
// and the socket to wait on. Used by one thread at a time (the sync engine's, or a
// `dpfs sync` request's own connection). libpq is loaded at the first connection
// (PostgresLoader), not at the daemon's start.
//
// Every exchange with the server has a deadline: a server that stops answering with
// its connections open (stopped, swapping, a network that drops packets) would
// otherwise hold the engine's round, and every command waiting for it, for as long as
// it stays so. The kernel of a stopped server still acknowledges what is sent, so
// neither TCP's user timeout nor keepalives notice; only waiting for the answer does.
import DPFSProtocol
import CPostgres
import PostgresLoader
import DataProtection
import Foundation
import Glibc

final class PostgresConnection {
    /// How long one statement may wait for its answer. The statements are small and
    /// the server's locks short: ten seconds is far beyond a busy server's reply.
    static let replyTimeout = 10
    /// How long a connection may take, its TLS and authentication included (libpq's
    /// connect_timeout, for each address it tries).
    static let connectTimeout = 3

    private let pq: UnsafePointer<dpfs_libpq>
    private let connection: OpaquePointer
    private let server: ConnectionString
    /// Set when a statement went unanswered: the connection is given up, not reused.
    private var abandoned = false

    /// Connects to `server`, giving up after `timeout` seconds.
    init(server: ConnectionString, timeout: Int = PostgresConnection.connectTimeout) throws {
        let pq = try ConnectionString.libpq()
        self.pq = pq
        self.server = server
        // The parsed options, not the string: libpq reads no string a second time, and
        // the deadline and name given here win over any in the string.
        let settings = server.options.map { ($0.keyword, $0.value) }
            + [("connect_timeout", String(timeout)), ("application_name", "dpfs-sync")]
        let made = Self.withCStrings(settings.map(\.0)) { keys in
            Self.withCStrings(settings.map(\.1)) { values in pq.pointee.connectdbParams(keys, values, 0) }
        }
        guard let made else { throw SyncError("cannot reach the sync server: out of memory") }
        PostgresNotices.route(made, pq)
        // Non-blocking, so that sending a statement never waits on a full socket either.
        guard pq.pointee.status(made) == CONNECTION_OK, pq.pointee.setnonblocking(made, 1) == 0 else {
            let message = server.redacting(Self.oneLine(pq.pointee.errorMessage(made)))
            pq.pointee.finish(made)
            throw SyncError.connectionFailed(message)
        }
        connection = made
    }

    /// Closing drops whatever the server has not answered: a transaction left open
    /// is rolled back when the server reads the end of the connection.
    deinit { pq.pointee.finish(connection) }

    /// The socket that becomes readable when the server sends (a notification).
    var socket: Int32 { pq.pointee.socket(connection) }

    var isBroken: Bool { abandoned || pq.pointee.status(connection) != CONNECTION_OK }

    /// Runs one statement; `parameters` as text (nil is NULL, Bytes go as hex bytea).
    /// A statement the server does not answer within `replyTimeout` seconds throws
    /// unreachable and leaves the connection broken.
    @discardableResult
    func execute(_ sql: String, _ parameters: [PostgresValue?] = []) throws -> PostgresRows {
        guard !abandoned else { throw SyncError.unreachable("the connection was given up") }
        let texts: [String?] = parameters.map { $0?.text }
        let sent = Self.withOptionalCStrings(texts) { values in
            pq.pointee.sendQueryParams(connection, sql, Int32(texts.count), nil, values, nil, nil, 0)
        }
        guard sent == 1 else { throw unreachable() }
        let deadline = ContinuousClock.now + .seconds(Self.replyTimeout)
        try flush(before: deadline)
        let result = try awaitResult(before: deadline)
        let status = pq.pointee.resultStatus(result)
        guard status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK else {
            let message = server.redacting(Self.oneLine(pq.pointee.resultErrorMessage(result)))
            let state = pq.pointee.resultErrorField(result, Int32(UInt8(ascii: "C"))).map { String(cString: $0) }
            pq.pointee.clear(result)
            if isBroken { throw SyncError.unreachable(message) }
            throw SyncError.server(message, state: state)
        }
        return PostgresRows(result, pq)
    }

    /// Sends what libpq still holds of the statement (libpq's documented loop: on a
    /// readable socket, read, so that a server waiting to send is not deadlocked).
    private func flush(before deadline: ContinuousClock.Instant) throws {
        while true {
            switch pq.pointee.flush(connection) {
            case 0: return
            case 1:
                if try wait(for: Int16(POLLIN | POLLOUT), before: deadline) & Int16(POLLIN) != 0 { try consume() }
            default: throw unreachable()
            }
        }
    }

    /// The statement's result (its first error, if it has one), once libpq has read
    /// every result up to the statement's end, so that the next can be sent.
    private func awaitResult(before deadline: ContinuousClock.Instant) throws -> OpaquePointer {
        var kept: OpaquePointer?
        do {
            while true {
                while pq.pointee.isBusy(connection) == 1 {
                    _ = try wait(for: Int16(POLLIN), before: deadline)
                    try consume()
                }
                guard let next = pq.pointee.getResult(connection) else { break }
                if let current = kept, !isFailure(next) || isFailure(current) {
                    pq.pointee.clear(next)
                } else {
                    if let current = kept { pq.pointee.clear(current) }
                    kept = next
                }
            }
        } catch {
            if let kept { pq.pointee.clear(kept) }
            throw error
        }
        guard let kept else { throw unreachable() }
        return kept
    }

    private func isFailure(_ result: OpaquePointer) -> Bool {
        let status = pq.pointee.resultStatus(result)
        return status != PGRES_COMMAND_OK && status != PGRES_TUPLES_OK
    }

    private func consume() throws {
        guard pq.pointee.consumeInput(connection) == 1 else { throw unreachable() }
    }

    /// Waits until the socket is ready for `events`, and returns those it is ready for;
    /// at the deadline, gives the connection up. No cancel request is sent: libpq's
    /// opens a connection of its own and waits for it without a deadline, and a server
    /// that answers nothing would not answer that either. Closing is enough (deinit).
    private func wait(for events: Int16, before deadline: ContinuousClock.Instant) throws -> Int16 {
        let fd = socket
        guard fd >= 0 else { throw unreachable() }
        while true {
            let left = ContinuousClock.now.duration(to: deadline)
            guard left > .zero else { throw giveUp("it did not answer within \(Self.replyTimeout) s") }
            var polled = pollfd(fd: fd, events: events, revents: 0)
            let ready = poll(&polled, 1, Self.milliseconds(roundingUp: left))
            if ready > 0 { return polled.revents }
            if ready < 0 && errno != EINTR { throw giveUp("poll: \(String(cString: strerror(errno)))") }
        }
    }

    /// The statement under way will never be read: the connection is not used again.
    private func giveUp(_ reason: String) -> SyncError {
        abandoned = true
        return SyncError.unreachable(reason)
    }

    /// Rounded up, so that a poll never ends just short of the deadline and spins.
    private static func milliseconds(roundingUp duration: Duration) -> Int32 {
        let (seconds, attoseconds) = duration.components
        return Int32(clamping: seconds * 1000 + attoseconds / 1_000_000_000_000_000 + 1)
    }

    /// libpq's last word on the connection, as an unreachable server.
    private func unreachable() -> SyncError {
        SyncError.unreachable(server.redacting(Self.oneLine(pq.pointee.errorMessage(connection))))
    }

    /// Runs `body` in one transaction, rolled back if it throws.
    func transaction<T>(_ body: () throws -> T) throws -> T {
        try execute("BEGIN")
        do {
            let value = try body()
            try execute("COMMIT")
            return value
        } catch {
            if !isBroken { _ = try? execute("ROLLBACK") }
            throw error
        }
    }

    /// The channels of the notifications that arrived, reading what the socket holds.
    func takeNotifications() throws -> [String] {
        try consume()
        var channels: [String] = []
        while let notice = pq.pointee.notifies(connection) {
            channels.append(String(cString: notice.pointee.relname))
            pq.pointee.freemem(notice)
        }
        return channels
    }

    private static func oneLine(_ text: UnsafePointer<CChar>?) -> String {
        guard let text else { return "no reply" }
        let lines = String(cString: text).split(whereSeparator: \.isNewline).map { $0.trimmingCharacters(in: .whitespaces) }
        return lines.first { !$0.isEmpty } ?? "no reply"
    }

    private static func withCStrings<R>(_ strings: [String], _ body: ([UnsafePointer<CChar>?]) -> R) -> R {
        withOptionalCStrings(strings.map { Optional($0) }, body)
    }

    private static func withOptionalCStrings<R>(_ strings: [String?], _ body: ([UnsafePointer<CChar>?]) -> R) -> R {
        let copies: [UnsafeMutablePointer<CChar>?] = strings.map { $0.flatMap { strdup($0) } }
        defer { for copy in copies { free(copy) } }
        return body(copies.map { $0.map { UnsafePointer($0) } } + [nil])
    }
}

/// A statement parameter.
enum PostgresValue {
    case text(String)
    case int(Int)
    case bytes([UInt8])

    var text: String {
        switch self {
        case .text(let text): return text
        case .int(let number): return String(number)
        case .bytes(let bytes): return "\\x" + Hex.encode(bytes)
        }
    }
}

/// The rows of one result, read as text; freed with the value.
final class PostgresRows {
    private let result: OpaquePointer
    private let pq: UnsafePointer<dpfs_libpq>

    init(_ result: OpaquePointer, _ pq: UnsafePointer<dpfs_libpq>) { self.result = result; self.pq = pq }
    deinit { pq.pointee.clear(result) }

    var count: Int { Int(pq.pointee.ntuples(result)) }
    /// Rows a command changed (INSERT, UPDATE, DELETE).
    var changed: Int { pq.pointee.cmdTuples(result).flatMap { Int(String(cString: $0)) } ?? 0 }

    func text(_ row: Int, _ column: Int) -> String? {
        guard pq.pointee.getisnull(result, Int32(row), Int32(column)) == 0,
              let value = pq.pointee.getvalue(result, Int32(row), Int32(column)) else { return nil }
        return String(cString: value)
    }

    func int(_ row: Int, _ column: Int) -> Int? { text(row, column).flatMap { Int($0) } }

    func bool(_ row: Int, _ column: Int) -> Bool? { text(row, column).map { $0 == "t" } }

    /// A bytea column (PostgreSQL's hex output: \x then two digits a byte).
    func bytes(_ row: Int, _ column: Int) -> [UInt8]? {
        guard let text = text(row, column), text.hasPrefix("\\x") else { return nil }
        return Hex.decode(String(text.dropFirst(2)))
    }
}
