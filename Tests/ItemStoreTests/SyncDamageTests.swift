// A synchronizable item damaged on disk: keychain sync cannot send it (it is left out
// of the versions), must not take it for deleted (the store still holds it, or every
// other device would delete its copy), and a received later version replaces it.
import DataProtection
import Testing
@testable import ItemStore

@Suite struct SyncDamageTests {
    @Test func aDamagedItemIsHeldUnlistedAndReplacedByAReceivedVersion() throws {
        let a = try TestDevice(), b = try TestDevice()
        a.add(["service": "s", "synchronizable": "yes", "accessible": "AfterFirstUnlock"], data: "one")
        let identity = try #require(try a.store.synchronizableVersions().first?.identity)
        let item = try #require(try a.store.synchronizedItem(identity: identity))
        try b.store.applySynchronized(item)
        try b.tamper("UPDATE items SET attributes = randomblob(length(attributes))")
        let unreadable = b.find(["service": "s", "synchronizable": "yes"], returning: "attributes").status
        #expect(unreadable == SecStatus.decode)
        let listed = try b.store.synchronizableVersions().count
        #expect(listed == 0)
        let held = try b.store.holdsSynchronizable(identity: identity)
        #expect(held)
        var newer = item
        newer.attributes["modified"] = String(item.modified + 10)
        try b.store.applySynchronized(newer)
        let secret = b.secret(["service": "s", "synchronizable": "yes"])
        #expect(secret == "one")
        let versions = try b.store.synchronizableVersions().count
        #expect(versions == 1)
    }
}
