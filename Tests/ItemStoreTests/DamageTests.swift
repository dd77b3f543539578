// A keychain file damaged on disk is named as damaged, never as an older copy put back:
// SQLite's integrity check sees what the record's digest cannot (an index), and an
// open refused for a file SQLite finds damaged says so (dpfs(1), fsck).
import DPFSProtocol
import DataProtection
import Foundation
import GRDB
import Testing
@testable import ItemStore

@Suite struct DamageTests {
    /// A device whose keychain holds three items, its store closed, as after an unmount.
    private func closedKeychain() throws -> TestDevice {
        let t = try TestDevice()
        for service in ["one", "two", "three"] {
            #expect(t.add(["service": service, "account": "a"], data: "secret-\(service)").status == 0)
        }
        try t.store.settle()
        try t.store.close()
        return t
    }

    /// The file offsets of `table`'s root page, where three items fit whole.
    private func page(of table: String, in path: String) throws -> Range<Int> {
        let queue = try UntouchedReading.open(path)
        return try queue.read { db in
            let size = try #require(try Int.fetchOne(db, sql: "PRAGMA page_size"))
            let root = try #require(try Int.fetchOne(db, sql: "SELECT rootpage FROM sqlite_schema WHERE name = ?",
                                                    arguments: [table]))
            return (root - 1) * size ..< root * size
        }
    }

    private func flipBit(_ path: String, at offset: Int) throws {
        let handle = try #require(FileHandle(forUpdatingAtPath: path))
        defer { try? handle.close() }
        try handle.seek(toOffset: UInt64(offset))
        let byte = try #require(try handle.read(upToCount: 1)?.first)
        try handle.seek(toOffset: UInt64(offset))
        try handle.write(contentsOf: [byte ^ 1])
    }

    @Test func aWholeKeychainPassesTheIntegrityCheck() throws {
        let t = try closedKeychain()
        #expect(KeychainIntegrity.damage(at: t.directory.itemStorePath)?.problems == nil)
        try t.reopenStore()
    }

    @Test func aDamagedIndexEntryIsFoundThoughTheRowsMatchTheRecord() throws {
        let t = try closedKeychain()
        let path = t.directory.itemStorePath
        try flipBit(path, at: try page(of: "items_identity", in: path).upperBound - 100)
        try ItemStore.checkGeneration(path: path, device: t.device)
        let damage = try #require(KeychainIntegrity.damage(at: path))
        #expect(damage.problems.contains { $0.contains("items_identity") }, "\(damage.problems)")
    }

    /// Rebuilds `items_identity` without the entry of item `id`, its table left whole:
    /// the index a damaged page can leave, with no byte of any row changed.
    private func dropIndexEntry(ofItem id: Int64, in path: String) throws {
        let identity = "SELECT sql FROM sqlite_schema WHERE name = 'items_identity'"
        let original = try #require(try DatabaseQueue(path: path).read { try String.fetchOne($0, sql: identity) })
        func defineIndex(_ sql: String, then: String? = nil) throws {
            let queue = try DatabaseQueue(path: path)
            try queue.writeWithoutTransaction { db in
                if let then { try db.execute(sql: then) }
                try db.execute(sql: "PRAGMA writable_schema = ON")
                try db.execute(sql: "UPDATE sqlite_schema SET sql = ? WHERE name = 'items_identity'", arguments: [sql])
            }
            try queue.close()
        }
        // A partial index, rebuilt, leaves the row out; the schema then says it is whole.
        try defineIndex(original + " WHERE id != \(id)")
        try defineIndex(original, then: "REINDEX items_identity")
    }

    @Test func anIndexMissingAnEntryIsRefusedAtOpen() throws {
        let t = try closedKeychain()
        let path = t.directory.itemStorePath
        try dropIndexEntry(ofItem: 1, in: path)
        // The rows are those the record names: only SQLite's check sees the index.
        try ItemStore.checkGeneration(path: path, device: t.device)
        // Opened, the store would answer errSecItemNotFound for item 1, and add its twin.
        let error = try #require(throws: KeychainDamage.self) { try t.reopenStore() }
        #expect(error.problems.contains { $0.contains("items_identity") }, "\(error)")
    }

    @Test func aRebuiltIndexOpensWithEveryItem() throws {
        let t = try closedKeychain()
        let path = t.directory.itemStorePath
        try dropIndexEntry(ofItem: 1, in: path)
        try #require(KeychainIntegrity.damage(at: path) != nil)
        // What dpfs(5) gives as the remedy: an index is derived from its table.
        try DatabaseQueue(path: path).writeWithoutTransaction { try $0.execute(sql: "REINDEX") }
        try t.reopenStore()
        for service in ["one", "two", "three"] {
            #expect(t.secret(["service": service, "account": "a"]) == "secret-\(service)")
        }
    }

    @Test func aDamagedPageIsRefusedAsDamageNotAsACopy() throws {
        let t = try closedKeychain()
        let path = t.directory.itemStorePath
        // The first cell pointer of the items page: the page's structure, not a value.
        try flipBit(path, at: try page(of: "items", in: path).lowerBound + 8)
        let error = try #require(throws: KeychainDamage.self) { try t.reopenStore() }
        #expect(error.description.contains("is damaged (SQLite's integrity check: "), "\(error)")
        #expect(!error.description.contains("older copy"), "\(error)")
    }

    /// A flipped cell pointer can land on bytes that claim a payload too big for SQLite
    /// (which of the two errors depends on the page's contents, random here): damage too.
    @Test func aPayloadTooBigIsDamage() {
        #expect(KeychainIntegrity.isDamage(DatabaseError(resultCode: .SQLITE_TOOBIG)))
        #expect(KeychainIntegrity.isDamage(DatabaseError(resultCode: .SQLITE_CORRUPT)))
        #expect(!KeychainIntegrity.isDamage(DatabaseError(resultCode: .SQLITE_BUSY)))
    }

    @Test func aChangedValueIsRefusedByTheRecord() throws {
        let t = try closedKeychain()
        let path = t.directory.itemStorePath
        try flipBit(path, at: try page(of: "items", in: path).upperBound - 100)
        #expect(KeychainIntegrity.damage(at: path)?.problems == nil, "SQLite does not see a value changed")
        let error = try #require(throws: DeviceRecordError.self) { try t.reopenStore() }
        #expect(error.description.contains("edited or damaged"), "\(error)")
    }
}
