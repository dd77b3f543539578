// One connection to the account's PostgreSQL server through libpq: parameterised
// statements in text format (bytea as PostgreSQL's hex form), LISTEN's notifications,
// and the socket to wait on. Used by one thread at a time (the sync engine's, or a
// `dpfs sync` request's own connection). libpq is loaded at the first connection
// (PostgresLoader), not at the daemon's start.
import DPFSProtocol
import CPostgres
import PostgresLoader
import DataProtection
import Foundation
import Glibc

final class PostgresConnection {
    private let pq: UnsafePointer<dpfs_libpq>
    private let connection: OpaquePointer
    private let server: ConnectionString

    /// Connects to `server`, giving up after `timeout` seconds.
    init(server: ConnectionString, timeout: Int = 3) throws {
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
        guard pq.pointee.status(made) == CONNECTION_OK else {
            let message = server.redacting(Self.oneLine(pq.pointee.errorMessage(made)))
            pq.pointee.finish(made)
            throw SyncError.unreachable(message)
        }
        connection = made
    }

    deinit { pq.pointee.finish(connection) }

    /// The socket that becomes readable when the server sends (a notification).
    var socket: Int32 { pq.pointee.socket(connection) }

    var isBroken: Bool { pq.pointee.status(connection) != CONNECTION_OK }

    /// Runs one statement; `parameters` as text (nil is NULL, Bytes go as hex bytea).
    @discardableResult
    func execute(_ sql: String, _ parameters: [PostgresValue?] = []) throws -> PostgresRows {
        let texts: [String?] = parameters.map { $0?.text }
        let result = Self.withOptionalCStrings(texts) { values in
            pq.pointee.execParams(connection, sql, Int32(texts.count), nil, values, nil, nil, 0)
        }
        guard let result else { throw unreachable() }
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
        guard pq.pointee.consumeInput(connection) == 1 else { throw unreachable() }
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
