// A daemon killed after its pull wrote received versions to the keychain and before
// sync.json recorded them: the next scan must record them as the other device's, send
// none as this device's own (a deletion dated at the remount would delete what was
// re-added elsewhere meanwhile), and still take a change made here after one as its own.
import DataProtection
import Foundation
import ItemStore
@testable import KeychainSync
import TestSupport
import Testing

@Suite struct ReceivedVersionCrashTests {
    private let provisioned: ProvisionedDevice
    private let device: LockStateManager
    private let items: ItemStore
    private let engine: SyncEngine
    private let crypto = AccountCrypto(accountID: "acct", epoch: 1, key: SecureBuffer.random(count: AEAD.keySize),
                                       idKey: SecureBuffer.random(count: AEAD.keySize))
    /// Before any date the test makes, so that every version is older than a scan's "now".
    private let start = Date().timeIntervalSince1970 - 1000

    init() throws {
        let made = try StoreDevice(prefix: "dpfs-syncreceived")
        (provisioned, device, items) = (made.provisioned, made.device, made.items)
        engine = try SyncEngine(directory: made.directory, device: device, items: items)
    }

    private func attributes(_ service: String, modified: Double) -> [String: String] {
        ["class": "genp", "service": service, "accessGroup": "TEAM.com.example.mail", "accessible": "AfterFirstUnlock",
         "created": String(start), "modified": String(modified)]
    }

    private func recordID(_ service: String) throws -> String {
        crypto.recordID(of: try #require(ItemStore.syncIdentity(of: attributes(service, modified: start))))
    }

    private func version(_ service: String, modified: Double, writer: String, deleted: Bool = false) -> RecordPlaintext {
        RecordPlaintext(attributes: attributes(service, modified: modified), deleted: deleted, writer: writer,
                        secret: deleted ? nil : ProvisionedDevice.secret("pw-\(service)-\(modified)"))
    }

    /// The state file after items a, b and c came from m1 and were recorded.
    private func recordedState() throws -> SyncState {
        var state = SyncState(accountID: "acct", server: "", sealedServer: nil, deviceID: "m8", epoch: 1, sealedKeys: "",
                              sealedPrivateKey: "", publicKey: "", lastSequence: 0, entries: [:], roster: nil)
        let exchange = Exchange(engine: engine, crypto: crypto)
        for service in ["a", "b", "c"] {
            #expect(try exchange.merge(version(service, modified: start, writer: "m1"), recordID: try recordID(service), &state))
        }
        try items.forgetReceivedSyncVersions()
        return state
    }

    @Test func receivedVersionsTheStateMissedAreNotSentAsThisDevicesOwn() throws {
        defer { try? items.close() }
        let saved = try recordedState()
        // The pull: m1 deleted a and updated b and c; the keychain takes them, the state
        // file never does (kill -9).
        let exchange = Exchange(engine: engine, crypto: crypto)
        var pulled = saved
        let deleted = start + 10
        #expect(try exchange.merge(version("a", modified: deleted, writer: "m1", deleted: true), recordID: try recordID("a"), &pulled))
        #expect(try exchange.merge(version("b", modified: deleted, writer: "m1"), recordID: try recordID("b"), &pulled))
        #expect(try exchange.merge(version("c", modified: deleted, writer: "m1"), recordID: try recordID("c"), &pulled))
        // Before the crash, this device deleted c itself.
        let identityC = try #require(ItemStore.syncIdentity(of: attributes("c", modified: start)))
        try items.removeSynchronized(identity: identityC)

        // The next mount's scan, over the state file as it was.
        var state = saved
        var remounted = Exchange(engine: engine, crypto: crypto)
        try remounted.scan(&state)
        #expect(remounted.foundReceived)
        let a = try #require(state.entries[try recordID("a")])
        #expect(a.deleted && !a.pending && a.writer == "m1" && a.modified == deleted, "m1's deletion, not m8's")
        let b = try #require(state.entries[try recordID("b")])
        #expect(!b.deleted && !b.pending && b.writer == "m1" && b.modified == deleted, "m1's update, not m8's")
        let c = try #require(state.entries[try recordID("c")])
        #expect(c.deleted && c.pending && c.writer == "m8", "a delete made here after the received version is this device's")

        // m2 re-added a meanwhile: it is newer than the deletion it follows, and stays.
        let reAdded = start + 20
        #expect(try remounted.merge(version("a", modified: reAdded, writer: "m2"), recordID: try recordID("a"), &state))
        let identityA = try #require(ItemStore.syncIdentity(of: attributes("a", modified: start)))
        #expect(try items.synchronizedItem(identity: identityA)?.modified == reAdded)
        #expect(state.entries[try recordID("a")]?.writer == "m2")
    }

    @Test func noRecordsAreKeptOnceForgottenAndTheKeychainStillOpens() throws {
        do {
            defer { try? items.close() }
            var state = try recordedState()
            let exchange = Exchange(engine: engine, crypto: crypto)
            #expect(try exchange.merge(version("a", modified: start + 10, writer: "m1", deleted: true),
                                       recordID: try recordID("a"), &state))
            #expect(try items.receivedSyncVersions().keys.sorted() == [try recordID("a")])
        }
        // The noted version is in the digest the device's record holds: the store opens
        // again with it, and forgets it.
        let reopened = try ItemStore(path: provisioned.directory.itemStorePath, device: device)
        defer { try? reopened.close() }
        #expect(try reopened.receivedSyncVersions().count == 1)
        try reopened.forgetReceivedSyncVersions()
        #expect(try reopened.receivedSyncVersions().isEmpty)
    }
}
