// Every keychain write bumps the item store's generation and records it, with a digest
// of every row, in the device's record in the secret store; an older database, and one
// whose rows were changed outside the store, are refused (dpfs(5)).
import DPFSProtocol
import DataProtection
import Foundation
import GRDB
import Testing
@testable import ItemStore

@Suite struct GenerationTests {
    private func recorded(_ t: TestDevice) throws -> Int {
        try #require(try t.device.deviceRecord()).keychainGeneration
    }

    @Test func everyWriteIsMirroredIntoTheRecord() throws {
        let t = try TestDevice()
        let before = try recorded(t)
        #expect(t.add(["service": "mail", "account": "bob"]).status == 0)
        #expect(try recorded(t) == before + 1)
        #expect(t.add(["service": "mail", "account": "bob"]).status == SecStatus.duplicateItem)
        #expect(try recorded(t) == before + 1, "a refused write commits nothing")
        #expect(t.store.perform(KeychainRequest(operation: .delete, app: nil, attributes: ["service": "mail"])).status == 0)
        #expect(try recorded(t) == before + 2)
        try t.reopenStore()
    }

    @Test func aDatabaseOlderThanTheRecordIsRefused() throws {
        let t = try TestDevice()
        #expect(t.add(["service": "mail", "account": "bob"]).status == 0)
        try DeviceRecordStore.update(for: t.device.deviceUUID, in: t.device.secretStore) { $0.keychainGeneration += 2 }
        #expect(throws: DeviceRecordError.self) { try t.reopenStore() }
        #expect(throws: DeviceRecordError.self) {
            try ItemStore.checkGeneration(path: t.directory.itemStorePath, device: t.device)
        }
    }

    @Test func anOlderCopyWrittenOverTheOpenKeychainIsNeverServed() throws {
        let t = try TestDevice()
        #expect(t.add(["service": "deleted"], data: "old secret").status == 0)
        #expect(t.add(["service": "changed"], data: "first").status == 0)
        // As an unmount leaves it: the -wal folded into the file.
        func fold() throws { try t.store.pool.writeWithoutTransaction { _ = try $0.checkpoint(.truncate) } }
        try fold()
        let path = t.directory.itemStorePath
        let older = try Data(contentsOf: URL(fileURLWithPath: path))
        #expect(t.delete(["service": "deleted"]).status == 0)
        #expect(t.update(["service": "changed"], newData: "second").status == 0)
        try fold()
        #expect(t.secret(["service": "changed"]) == "second", "the store's own checkpoint is no stranger's change")
        let generation = try recorded(t)
        // Written in place, as cp does: the open store's connections keep reading the file.
        let file = try FileHandle(forWritingTo: URL(fileURLWithPath: path))
        try file.truncate(atOffset: 0)
        try file.write(contentsOf: older)
        try file.close()
        let deleted = t.find(["service": "deleted"], returning: "data")
        #expect(deleted.status == SecStatus.io, "a deleted item does not come back")
        #expect(deleted.message?.contains("changed by another hand") == true, "\(deleted.message ?? "")")
        #expect(t.secret(["service": "changed"]) == nil, "nor an old secret")
        #expect(t.add(["service": "new"]).status == SecStatus.io, "a write is refused too")
        #expect(try recorded(t) == generation, "and the record does not move back")
        #expect(throws: DeviceRecordError.self) { try t.reopenStore() }
    }

    @Test func aDeletedRowPutBackIsRefused() throws {
        let t = try TestDevice()
        #expect(t.add(["service": "kept"]).status == 0)
        #expect(t.add(["service": "doomed"]).status == 0)
        let doomed = try #require(try t.store.pool.read {
            try Row.fetchOne($0, sql: "SELECT * FROM items ORDER BY id DESC LIMIT 1")
        })
        #expect(t.store.perform(KeychainRequest(operation: .delete, app: nil, attributes: ["service": "doomed"])).status == 0)
        try t.reopenStore()
        // What an attacker with the database file does: the row, as it was, inserted again.
        let placeholders = Array(repeating: "?", count: doomed.count).joined(separator: ", ")
        try t.store.pool.write { db in
            try db.execute(sql: "INSERT INTO items VALUES (\(placeholders))", arguments: StatementArguments(doomed.databaseValues))
        }
        #expect(throws: DeviceRecordError.self) { try t.reopenStore() }
        #expect(throws: DeviceRecordError.self) {
            try ItemStore.checkGeneration(path: t.directory.itemStorePath, device: t.device)
        }
    }

    @Test func aWriteRecordedButNotCommittedLeavesTheStateBeforeAcceptable() throws {
        let t = try TestDevice()
        #expect(t.add(["service": "mail"]).status == 0)
        let committed = try #require(try t.device.deviceRecord()?.keychainState)
        // As a kill between a write's record and its commit leaves it.
        try t.device.recordKeychainState(KeychainState(generation: committed.generation + 1, digest: "00"),
                                         replacing: committed)
        try t.reopenStore()
        #expect(try t.device.deviceRecord()?.keychainState == committed, "the record is back at the committed state")
        #expect(t.find(["service": "mail"]).status == 0)
        #expect(t.add(["service": "more"]).status == 0, "and writes go on from there")
        try t.reopenStore()
    }

    @Test func aCommittedWriteCannotBeUndoneByACopyFromBeforeIt() throws {
        let t = try TestDevice()
        #expect(t.add(["service": "bank"], data: "TOPSECRET").status == 0)
        let files = ["", "-wal", "-shm"].map { t.directory.itemStorePath + $0 }
        let copies = files.map { FileManager.default.contents(atPath: $0) }
        #expect(t.delete(["service": "bank"]).status == 0)
        #expect(try t.device.deviceRecord()?.keychainPrevious == nil, "settled as soon as the delete committed")
        // The daemon killed after the delete (no clean end), the copy put back.
        for (path, bytes) in zip(files, copies) {
            if let bytes { try bytes.write(to: URL(fileURLWithPath: path)) } else { unlink(path) }
        }
        #expect(throws: DeviceRecordError.self) {
            try ItemStore.checkGeneration(path: t.directory.itemStorePath, device: t.device)
        }
        #expect(throws: DeviceRecordError.self) { try t.reopenStore() }
    }

    @Test func aRefusedOpenLeavesTheKeychainAsItWasFound() throws {
        let t = try TestDevice()
        #expect(t.add(["service": "mail"]).status == 0)
        try t.store.settle()
        try t.store.close()
        try DeviceRecordStore.update(for: t.device.deviceUUID, in: t.device.secretStore) { $0.keychainGeneration += 2 }
        let path = t.directory.itemStorePath
        // A closed store leaves no -wal or -shm: the refusals must not make them again.
        let files = ["", "-wal", "-shm"].map { path + $0 }
        let found = files.map { FileManager.default.contents(atPath: $0) }
        #expect(found[1] == nil && found[2] == nil)
        #expect(throws: DeviceRecordError.self) { try t.reopenStore() }
        #expect(throws: DeviceRecordError.self) { try ItemStore.checkGeneration(path: path, device: t.device) }
        #expect(files.map { FileManager.default.contents(atPath: $0) } == found,
                "the file is as it was, byte for byte, and no -wal or -shm was made or changed")
    }

    /// A device whose store was killed after a write: the database and the -wal that
    /// holds the write as they were while the store ran, and the -shm with them only
    /// `withIndex` (a crash image copied without it, or a -shm removed). Its paths: the
    /// file, -wal and -shm.
    private func killedAfterAWrite(withIndex: Bool = false) throws -> (TestDevice, [String]) {
        let t = try TestDevice()
        #expect(t.add(["service": "mail"]).status == 0)
        let path = t.directory.itemStorePath
        let files = ["", "-wal", "-shm"].map { path + $0 }
        let copies = try files.prefix(withIndex ? 3 : 2).map { try #require(FileManager.default.contents(atPath: $0)) }
        try t.store.close()
        for (file, bytes) in zip(files, copies) { try bytes.write(to: URL(fileURLWithPath: file)) }
        if !withIndex { unlink(files[2]) }
        #expect(copies[1].count > 32, "the write is in the -wal (past its header), not in the file")
        return (t, files)
    }

    @Test(arguments: [false, true])
    func aRefusedOpenLeavesAKilledStoresFilesAsItFoundThem(withIndex: Bool) throws {
        let (t, files) = try killedAfterAWrite(withIndex: withIndex)
        try DeviceRecordStore.update(for: t.device.deviceUUID, in: t.device.secretStore) { $0.keychainGeneration += 2 }
        let found = files.map { FileManager.default.contents(atPath: $0) }
        #expect(throws: DeviceRecordError.self) { try t.reopenStore() }
        #expect(throws: DeviceRecordError.self) { try ItemStore.checkGeneration(path: files[0], device: t.device) }
        #expect(KeychainIntegrity.damage(at: files[0]) == nil)
        #expect(files.map { FileManager.default.contents(atPath: $0) } == found,
                "the file, its -wal and its -shm (or none) are as they were, byte for byte")
    }

    @Test func aKilledStoresWALIsReadByTheChecksAndTheOpen() throws {
        let (t, files) = try killedAfterAWrite()
        let found = files.map { FileManager.default.contents(atPath: $0) }
        // The record names the state with the write: a check that missed the -wal refuses.
        try ItemStore.checkGeneration(path: files[0], device: t.device)
        #expect(files.map { FileManager.default.contents(atPath: $0) } == found, "fsck's check changes no file")
        try t.reopenStore()
        #expect(t.secret(["service": "mail"]) == "secret")
    }

    @Test func aRefusedOpenLeavesAWALBesideAnEmptyFile() throws {
        let (t, files) = try killedAfterAWrite()
        // SQLite deletes the -wal of an empty database file as it opens it.
        try Data().write(to: URL(fileURLWithPath: files[0]))
        let found = files.map { FileManager.default.contents(atPath: $0) }
        #expect(throws: DeviceRecordError.self) { try t.reopenStore() }
        #expect(throws: DeviceRecordError.self) { try ItemStore.checkGeneration(path: files[0], device: t.device) }
        #expect(files.map { FileManager.default.contents(atPath: $0) } == found, "the -wal is still there, unchanged")
    }

    @Test func aStoreChangesNoFileUntilItOpens() throws {
        let (t, files) = try killedAfterAWrite(withIndex: true)
        let found = files.map { FileManager.default.contents(atPath: $0) }
        // As the daemon makes it before the mount, which may still fail.
        let store = ItemStore(verified: try ItemStore.verify(path: files[0], device: t.device), device: t.device)
        #expect(store.perform(KeychainRequest(operation: .find, app: nil, attributes: ["service": "mail"])).status
                    == SecStatus.io, "a request before the open is refused, not served")
        #expect(files.map { FileManager.default.contents(atPath: $0) } == found,
                "the file, its -wal and its -shm are as they were, byte for byte")
        try store.open()
        #expect(store.perform(KeychainRequest(operation: .find, app: nil, attributes: ["service": "mail"])).status == 0,
                "opened, it serves the write its -wal held")
        #expect(throws: ItemStoreError.self) { try store.open() }
    }

    /// The keychain as a write by sqlite3 in rollback mode, cut short, leaves it: pages
    /// of the write in the file, the pages they replace in a hot -journal. Its paths:
    /// the file, -journal, -wal and -shm.
    private func cutShortInRollbackMode(_ t: TestDevice) throws -> [String] {
        try t.store.settle()
        try t.store.close()
        let path = t.directory.itemStorePath
        let files = ["", "-journal", "-wal", "-shm"].map { path + $0 }
        let queue = try DatabaseQueue(path: path)
        try queue.writeWithoutTransaction { try $0.execute(sql: "PRAGMA journal_mode = DELETE") }
        var cutShort: [Data] = []
        try queue.inDatabase { db in
            // So small a cache that the write's pages go to the file before any commit.
            try db.execute(sql: "PRAGMA cache_size = 2")
            try db.inTransaction {
                try db.execute(sql: "CREATE TABLE cut_short (x)")
                for _ in 0..<100 { try db.execute(sql: "INSERT INTO cut_short VALUES (randomblob(4000))") }
                cutShort = try files.prefix(2).map { try #require(FileManager.default.contents(atPath: $0)) }
                return .rollback
            }
        }
        try queue.close()
        for (file, bytes) in zip(files, cutShort) { try bytes.write(to: URL(fileURLWithPath: file)) }
        #expect(HotJournal.isHot(files[1]))
        return files
    }

    @Test func aHotJournalIsRefusedAndLeftAsItWasFound() throws {
        let t = try TestDevice()
        #expect(t.add(["service": "mail"]).status == 0)
        let files = try cutShortInRollbackMode(t)
        let found = files.map { FileManager.default.contents(atPath: $0) }
        #expect(throws: HotJournal.self) { try ItemStore.verify(path: files[0], device: t.device) }
        #expect(throws: HotJournal.self) { try ItemStore.checkGeneration(path: files[0], device: t.device) }
        #expect(KeychainIntegrity.damage(at: files[0]) == nil, "no damage is claimed for it")
        #expect(files.map { FileManager.default.contents(atPath: $0) } == found,
                "the file and its -journal are as they were, byte for byte, and no -wal or -shm was made")
        // What the refusal says to do: any SQLite connection plays the journal back.
        let checked = try DatabaseQueue(path: files[0]).read { try String.fetchOne($0, sql: "PRAGMA integrity_check") }
        #expect(checked == "ok")
        #expect(FileManager.default.contents(atPath: files[1]) == nil, "the journal was played back")
        try ItemStore.checkGeneration(path: files[0], device: t.device)
        try t.reopenStore()
        #expect(t.secret(["service": "mail"]) == "secret")
    }

    @Test func aKeychainTheOpenMigratesIsCheckedAsMigrated() throws {
        let t = try TestDevice()
        #expect(t.add(["service": "mail"]).status == 0)
        try t.store.settle()
        try t.store.close()
        let path = t.directory.itemStorePath
        // As a store made before the last migration was: the table it adds not there.
        let queue = try DatabaseQueue(path: path)
        try queue.write { try $0.execute(sql: "DROP TABLE meta; DELETE FROM grdb_migrations WHERE identifier = 'v2-generation'") }
        try queue.close()
        // What the record holds for it is the state it has once migrated: a new meta.
        let migrated = try DatabaseQueue()
        try DatabaseQueue(path: path).backup(to: migrated)
        try Schema.migrator.migrate(migrated)
        let (state, _) = try migrated.read { try ItemStore.scannedState($0) }
        let recorded = try #require(try t.device.deviceRecord()?.keychainState)
        try t.device.recordKeychainState(state, replacing: recorded)
        try t.device.settleKeychainRecord(at: state)
        try t.reopenStore()
        #expect(t.find(["service": "mail"]).status == 0)
        #expect(t.add(["service": "more"]).status == 0, "and writes go on from the migrated state")
        try t.reopenStore()
    }

    @Test func theRecordNamesTheDatabasesStateAfterEveryWrite() throws {
        let t = try TestDevice()
        func recordMatchesAScan() throws -> Bool {
            let (scanned, _) = try t.store.pool.read { try ItemStore.scannedState($0) }
            return try t.device.deviceRecord()?.keychainState == scanned
        }
        #expect(t.add(["service": "mail"]).status == 0)
        #expect(try recordMatchesAScan(), "after an add")
        #expect(t.update(["service": "mail"], to: ["account": "bob"]).status == 0)
        #expect(try recordMatchesAScan(), "after an update: the kept digest follows the changed row")
        for index in 0..<20 { #expect(t.add(["service": "bulk", "account": "a\(index)"]).status == 0) }
        #expect(t.delete(["service": "bulk"]).status == 0)
        #expect(try recordMatchesAScan(), "after deleting many rows at once")
        try t.reopenStore()
        #expect(t.find(["service": "mail"]).status == 0, "and the store opens against its record")
    }

    @Test func aRecordOfTheFirstDigestFormatIsAcceptedOnceAndRecordedAnew() throws {
        let t = try TestDevice()
        #expect(t.add(["service": "mail"]).status == 0)
        let current = try #require(try t.device.deviceRecord()?.keychainState)
        // The record a device of the first format holds: every row hashed in order.
        let legacy = try t.store.pool.read { try ItemStore.legacyState($0) }
        #expect(legacy != current)
        try t.device.recordKeychainState(legacy, replacing: legacy)
        try t.device.settleKeychainRecord(at: legacy)
        try t.reopenStore()
        #expect(try t.device.deviceRecord()?.keychainState == current, "recorded again in the current format")
        #expect(t.find(["service": "mail"]).status == 0)
    }
}
