// A keychain write is on disk when the call reports success: the database's writer
// syncs its -wal at each commit (synchronous FULL), whatever GRDB sets when it turns
// WAL on.
import Foundation
import GRDB
@testable import ItemStore
import Testing

@Suite struct DurabilityTests {
    @Test func theWriterSyncsEveryCommit() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("dpfs-durable-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let pool = try Schema.open(directory.appendingPathComponent("keychain.sqlite").path)
        defer { try? pool.close() }
        let journal = try pool.writeWithoutTransaction { try String.fetchOne($0, sql: "PRAGMA journal_mode") }
        let level = try pool.writeWithoutTransaction { try Int.fetchOne($0, sql: "PRAGMA synchronous") }
        #expect(journal == "wal")
        #expect(level == 2, "FULL: the -wal is synced at each commit")
    }
}
