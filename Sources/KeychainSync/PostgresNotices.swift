// What the sync server says outside a statement's result: a NOTICE or WARNING while
// a statement runs, or an error it sends between statements, such as the FATAL of a
// server shutting down. libpq's own receiver writes each raw to stderr, which in a
// daemon is daemon.log, without the time and level every line there has: they go
// through the daemon's log instead, one line each, at a level that says what they
// mean to dpfs.
import CPostgres
import Foundation
import Logging
import PostgresLoader

enum PostgresNotices {
    static let logger = Logger(label: "dpfs.sync")

    /// Sends `connection`'s notices to `log(severity:text:)`.
    static func route(_ connection: OpaquePointer, _ pq: UnsafePointer<dpfs_libpq>) {
        // The table is libpq's for the life of the process (PostgresLoader).
        _ = pq.pointee.setNoticeReceiver(connection, { context, result in
            guard let context, let result else { return }
            PostgresNotices.received(result, UnsafePointer(context.assumingMemoryBound(to: dpfs_libpq.self)))
        }, UnsafeMutableRawPointer(mutating: pq))
    }

    private static func received(_ result: OpaquePointer, _ pq: UnsafePointer<dpfs_libpq>) {
        func field(_ code: Character) -> String? {
            guard let ascii = code.asciiValue, let text = pq.pointee.resultErrorField(result, Int32(ascii)) else { return nil }
            return String(cString: text)
        }
        // The severity in English (PostgreSQL 9.6 and later), else as localised.
        let severity = field("V") ?? field("S") ?? ""
        log(severity: severity, text: field("M").map(oneLine) ?? "no message")
    }

    /// Logs what the server said: a server closing the connection (shut down, or the
    /// connection ended by its administrator) is routine, the engine reconnects.
    static func log(severity: String, text: String) {
        switch severity {
        case "FATAL", "PANIC":
            logger.info("keychain sync: the sync server closed the connection: \(text)")
        case "ERROR", "WARNING":
            logger.warning("keychain sync: the sync server says: \(text)")
        default:
            logger.debug("keychain sync: the sync server says: \(text)")
        }
    }

    private static func oneLine(_ text: String) -> String {
        text.split(whereSeparator: \.isNewline).map { $0.trimmingCharacters(in: .whitespaces) }
            .filter { !$0.isEmpty }.joined(separator: " ")
    }
}
