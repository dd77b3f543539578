// Secrets at rest: sealed in the database and its WAL, bound to their row, and a
// damaged row costs only its own item.
import DPFSProtocol
import DataProtection
import Foundation
import Testing
@testable import ItemStore

@Suite struct EncryptionTests {
    @Test func noSecretInPlaintextInTheDatabaseOrWAL() throws {
        let t = try TestDevice()
        let marker = "PLAINTEXT-MARKER-7f3a9c"
        for accessibility in Accessibility.allCases {
            #expect(t.add(["service": accessibility.rawValue, "accessible": accessibility.rawValue],
                          data: marker + accessibility.rawValue).status == 0)
        }
        #expect(t.update(["service": "WhenUnlocked"], newData: marker + "-updated").status == 0)
        #expect(t.update(["service": "Always"], to: ["accessible": "AfterFirstUnlock"]).status == 0)
        let files = t.databaseFiles()
        #expect(files.count > 0)
        #expect(!files.contains(Data(marker.utf8)))
        #expect(files.contains(Data("WhenUnlocked".utf8)), "accessibility is stored in clear, so the scan does see the files")
        #expect(t.secret(["service": "WhenUnlocked"]) == marker + "-updated")
    }

    @Test func aCorruptRowFailsOnlyItsOwnItem() throws {
        let t = try TestDevice()
        t.add(["service": "good"], data: "fine")
        t.add(["service": "bad"], data: "doomed")
        t.add(["service": "good2"], data: "fine too")
        // Flip one byte of the sealed secret (rows are numbered in the order added).
        try t.tamper("UPDATE items SET secret = substr(secret, 1, 30) || X'00' || substr(secret, 32) WHERE id = 2")
        #expect(t.find(["service": "bad"]).status == SecStatus.decode)
        #expect(t.secret(["service": "good"]) == "fine")
        #expect(t.secret(["service": "good2"]) == "fine too")
        // Attributes need no class key, and the damaged item can still be deleted.
        #expect(t.find(["service": "bad"], returning: "attributes").status == 0)
        #expect(t.update(["service": "bad"], to: ["account": "x"]).status == SecStatus.decode)
        #expect(t.delete(["service": "bad"]).status == 0)
        #expect(t.find([:], limit: "all").items.count == 2)
    }

    @Test func secretsCannotBeMovedBetweenRows() throws {
        let t = try TestDevice()
        t.add(["service": "a"], data: "alpha")
        t.add(["service": "b"], data: "bravo")
        try t.tamper("""
            CREATE TEMP TABLE original AS SELECT id, secret FROM items;
            UPDATE items SET secret = (SELECT secret FROM original WHERE original.id <> items.id);
            """)
        #expect(t.find(["service": "a"]).status == SecStatus.decode)
        #expect(t.find(["service": "b"]).status == SecStatus.decode)
    }

    @Test func attributesBoundToTheSecretCannotBeRewritten() throws {
        let t = try TestDevice(sandboxApp: "com.example.mail", entitlements: entitlementsPlist(
            appID: "ABCDE12345.com.example.mail", groups: ["ABCDE12345.com.example.mail", "ABCDE12345.com.example.shared"]))
        t.add(["service": "private"], data: "mine")
        t.add(["service": "weak", "accessible": "Always"], data: "other")
        t.add(["service": "shared", "accessGroup": "ABCDE12345.com.example.shared"], data: "ours")
        // Moving an item into a shared group (its hash copied from an item there), or to
        // a weaker class, breaks its seal.
        try t.tamper("UPDATE items SET accessGroup = (SELECT accessGroup FROM items WHERE id = 3) WHERE id = 1")
        try t.tamper("UPDATE items SET accessible = 'AlwaysThisDeviceOnly' WHERE id = 2")
        #expect(t.find(["service": "private"]).status == SecStatus.decode)
        #expect(t.find(["service": "weak"]).status == SecStatus.decode)
        try t.tamper("UPDATE items SET accessible = 'Sometimes' WHERE id = 2")
        #expect(t.find(["service": "weak"], returning: "attributes").status == SecStatus.decode)
        #expect(t.delete(["service": "weak"]).status == 0)
    }

    @Test func erasedDevicesLoseTheirItems() throws {
        let t = try TestDevice(eraseAfter: 1)
        t.add(["service": "s", "accessible": "Always"])
        t.lock()
        #expect(throws: LockError.erased) { try t.device.unlock(passcode: TestDevice.secret("0000")) }
        // The class keys were replaced, so the items were unreadable anyway: they are gone.
        #expect(t.find(["service": "s"]).status == SecStatus.itemNotFound)
        #expect(t.add(["service": "s", "accessible": "Always"], data: "fresh").status == 0)
        #expect(t.secret(["service": "s"]) == "fresh")
    }
}
