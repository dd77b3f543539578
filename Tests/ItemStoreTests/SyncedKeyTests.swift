// A key item that keychain sync carries to another device arrives with its public
// key (a find there makes its SecKey of it), even from a record that lacks the
// attribute.
import DPFSProtocol
import DataProtection
import Foundation
import Testing
@testable import ItemStore

@Suite struct SyncedKeyTests {
    private let tag = Data("com.example.synced".utf8).hexString

    @Test func aSyncedKeyArrivesWithItsPublicKey() throws {
        let a = try TestDevice(), b = try TestDevice(), c = try TestDevice()
        let made = a.addOrdinaryKey(["applicationTag": tag, "synchronizable": "yes"])
        #expect(made.status == SecStatus.success)
        let publicKey = made.publicKey.hexString
        let identity = try #require(try a.store.synchronizableVersions().first?.identity)
        let item = try #require(try a.store.synchronizedItem(identity: identity))
        let query = ["class": ItemClass.keys.rawValue, "applicationTag": tag, "synchronizable": "yes"]

        try b.store.applySynchronized(item)
        #expect(b.find(query, returning: "attributes").items.first?.attributes?["publicKey"] == publicKey)

        var bare = item
        bare.attributes["publicKey"] = nil
        try c.store.applySynchronized(bare)
        #expect(c.find(query, returning: "attributes").items.first?.attributes?["publicKey"] == publicKey)
    }
}
