// Read-only connections for the lookups of keychain calls. GRDB's reader pool costs a
// find more than its SELECT: each read passes the pool's semaphore and queues, and
// first runs `PRAGMA schema_version` (a statement and a read lock of its own) to notice
// schema changes. The store's schema is fixed once it is open, so a lookup takes an
// idle connection here and runs on it directly.
import DPFSProtocol
import Foundation
import GRDB

final class LookupConnections: Sendable {
    private let path: String
    private let configuration: Configuration
    private struct State {
        /// Connections not in use; one more is opened whenever all are busy, so there
        /// are never more than lookups have run at once.
        var idle: [DatabaseQueue] = []
        var closed = false
    }
    private let state = PosixMutex(State())

    init(path: String) {
        self.path = path
        var configuration = Configuration()
        configuration.readonly = true
        configuration.busyMode = .timeout(10)
        configuration.label = "dpfs.keychain.lookup"
        self.configuration = configuration
    }

    /// Runs `body`, which reads with single statements (each atomic), on an idle connection.
    func read<T>(_ body: (Database) throws -> T) throws -> T {
        let taken = try state.withLock { state -> DatabaseQueue? in
            guard !state.closed else { throw DatabaseError(resultCode: .SQLITE_MISUSE, message: "the item store is closed") }
            return state.idle.popLast()
        }
        let connection = try taken ?? DatabaseQueue(path: path, configuration: configuration)
        defer { putBack(connection) }
        return try connection.inDatabase(body)
    }

    private func putBack(_ connection: DatabaseQueue) {
        let keep = state.withLock { state in
            if !state.closed { state.idle.append(connection) }
            return !state.closed
        }
        if !keep { try? connection.close() }
    }

    /// Closes the idle connections; one in use closes when its lookup ends, and later
    /// lookups fail.
    func close() throws {
        let idle = state.withLock { state in
            state.closed = true
            defer { state.idle = [] }
            return state.idle
        }
        for connection in idle { try connection.close() }
    }
}
