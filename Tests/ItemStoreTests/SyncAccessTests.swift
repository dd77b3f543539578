// ItemStore+Sync: what keychain sync reads and writes. An item exported from one store
// and applied to another is the same item there (identity, group, dates, secret);
// non-synchronizable items are never listed; a locked class refuses the write until
// the unlock; a removal is of that item only; apps' writes tell the observers.
import DPFSProtocol
import DataProtection
import Foundation
import Synchronization
import Testing
@testable import ItemStore

@Suite struct SyncAccessTests {
    @Test func anExportedItemAppliesAsTheSameItem() throws {
        let a = try TestDevice(), b = try TestDevice()
        #expect(a.add(["service": "mail", "account": "ann", "label": "Mail", "synchronizable": "yes",
                       "accessible": "AfterFirstUnlock"], data: "hunter2").status == 0)
        a.add(["service": "local"], data: "stays")
        let versions = try a.store.synchronizableVersions()
        #expect(versions.count == 1)
        let identity = try #require(versions.first?.identity)
        let item = try #require(try a.store.synchronizedItem(identity: identity))
        #expect(String(decoding: item.secret.bytes, as: UTF8.self) == "hunter2")
        try b.store.applySynchronized(item)
        #expect(b.secret(["service": "mail", "synchronizable": "yes"]) == "hunter2")
        var attributes = try #require(b.find(["service": "mail", "synchronizable": "yes"], returning: "attributes").items.first?.attributes)
        var original = try #require(a.find(["service": "mail", "synchronizable": "yes"], returning: "attributes").items.first?.attributes)
        // Each device's copy is its own item, with its own persistent reference.
        #expect(attributes.removeValue(forKey: "persistentRef") != original.removeValue(forKey: "persistentRef"))
        #expect(attributes == original)
        // Applied again with a later date and new data: replaced in place, not duplicated.
        var newer = item
        newer.attributes["modified"] = String(item.modified + 10)
        newer.secret = "changed".withCString { SecureBuffer(copying: UnsafeRawBufferPointer(start: $0, count: 7)) }
        try b.store.applySynchronized(newer)
        #expect(b.find(["service": "mail", "synchronizable": "yes"], limit: "all").items.compactMap(\.data) == [Data("changed".utf8)])
        #expect(try b.store.synchronizableVersions().first?.modified == item.modified + 10)
        try b.store.removeSynchronized(identity: identity)
        #expect(b.find(["service": "mail", "synchronizable": "yes"]).status == SecStatus.itemNotFound)
    }

    @Test func aLockedClassWaitsForTheUnlock() throws {
        let a = try TestDevice(), b = try TestDevice()
        a.add(["service": "s", "synchronizable": "yes"], data: "whenUnlocked")
        let identity = try #require(try a.store.synchronizableVersions().first?.identity)
        let item = try #require(try a.store.synchronizedItem(identity: identity))
        b.lock()
        #expect(throws: (any Error).self) { try b.store.applySynchronized(item) }
        do { try b.store.applySynchronized(item) } catch { #expect(ItemStore.isUnavailable(error)) }
        a.lock()
        do { _ = try a.store.synchronizedItem(identity: identity) } catch { #expect(ItemStore.isUnavailable(error)) }
        try b.unlock()
        try b.store.applySynchronized(item)
        #expect(b.secret(["service": "s", "synchronizable": "yes"]) == "whenUnlocked")
    }

    @Test func aReceivedItemMayNotBeThisDeviceOnly() throws {
        let a = try TestDevice(), b = try TestDevice()
        a.add(["service": "s", "synchronizable": "yes"])
        let identity = try #require(try a.store.synchronizableVersions().first?.identity)
        var item = try #require(try a.store.synchronizedItem(identity: identity))
        item.attributes["accessible"] = "WhenUnlockedThisDeviceOnly"
        #expect(throws: (any Error).self) { try b.store.applySynchronized(item) }
        #expect(b.find(["service": "s", "synchronizable": "any"]).status == SecStatus.itemNotFound)
    }

    @Test func appWritesTellTheObservers() throws {
        let t = try TestDevice()
        let count = Mutex(0)
        t.store.changeObservers.add { count.withLock { $0 += 1 } }
        t.add(["service": "s"])
        _ = t.find(["service": "s"])
        _ = t.update(["service": "s"], newData: "new")
        _ = t.delete(["service": "s"])
        _ = t.delete(["service": "none"])
        #expect(count.withLock { $0 } == 3)
    }
}
