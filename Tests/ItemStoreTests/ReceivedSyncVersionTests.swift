// The `sync_received` table: a store made before it opens with its record unchanged
// (the empty table adds nothing to the digest), and a row put there by another hand is
// refused like any other.
import DataProtection
import Foundation
import GRDB
import Testing
@testable import ItemStore

@Suite struct ReceivedSyncVersionTests {
    @Test func aStoreMadeBeforeTheTableOpensAndNotes() throws {
        let t = try TestDevice()
        #expect(t.add(["service": "mail"]).status == 0)
        try t.store.settle()
        try t.store.close()
        let queue = try DatabaseQueue(path: t.directory.itemStorePath)
        try queue.write { try $0.execute(sql: "DROP TABLE sync_received; DELETE FROM grdb_migrations WHERE identifier = 'v3-sync-received'") }
        try queue.close()
        try t.reopenStore()
        #expect(t.find(["service": "mail"]).status == 0)
        let identity = try #require(ItemStore.syncIdentity(of: ["class": "genp", "service": "gone", "accessGroup": "TEAM.g"]))
        try t.store.removeSynchronized(identity: identity, noting: ReceivedSyncVersion(recordID: "r", modified: 1, deleted: true, writer: "w"))
        #expect(try t.store.receivedSyncVersions()["r"]?.writer == "w")
        try t.reopenStore()
    }

    @Test func aRowPutThereByAnotherHandIsRefused() throws {
        let t = try TestDevice()
        #expect(t.add(["service": "mail"]).status == 0)
        try t.store.pool.write { db in
            try db.execute(sql: "INSERT INTO sync_received VALUES ('r', 1, 1, 'w')")
        }
        #expect(throws: DeviceRecordError.self) { try t.reopenStore() }
    }
}
