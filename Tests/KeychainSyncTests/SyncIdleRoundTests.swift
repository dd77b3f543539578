// A round of an account in which nothing changed costs next to nothing: it reads no
// item (the item store's generation did not move) and not sync.json (the engine
// keeps the state it last read or wrote); a local write makes the next round scan,
// and a changed state is still written to the file. The server here refuses every
// connection (port 1), so each round ends unreachable after its local part.
import DPFSProtocol
import DataProtection
import Foundation
import ItemStore
@testable import KeychainSync
import Synchronization
import TestSupport
import Testing

@Suite struct SyncIdleRoundTests {
    private func item(_ account: String) -> SyncedItem {
        SyncedItem(attributes: ["class": "genp", "accessGroup": "test.group", "service": "idle", "account": account,
                                "accessible": "AfterFirstUnlock", "created": "1000", "modified": "1000"],
                   secret: SecureBuffer.random(count: 8))
    }

    private func roundEndsUnreachable(_ engine: SyncEngine) {
        var connection: PostgresConnection?
        do {
            _ = try engine.round(&connection)
            Issue.record("the round connected to port 1")
        } catch let error as SyncError {
            #expect(error.isUnreachable, "\(error)")
        } catch {
            Issue.record("\(error)")
        }
    }

    @Test func aRoundWithNothingChangedReadsNoItemAndNoStateFile() throws {
        let made = try StoreDevice(prefix: "dpfs-syncidle")
        let (directory, device, items) = (made.directory, made.device, made.items)
        defer { withExtendedLifetime(made) {} }
        defer { try? items.close() }
        let crypto = AccountCrypto(accountID: "acct", epoch: 1, key: SecureBuffer.random(count: AEAD.keySize),
                                   idKey: SecureBuffer.random(count: AEAD.keySize))
        let sealedKeys = try #require(SyncState.seal(crypto.keyPair(), purpose: "account-keys", accountID: "acct", device: device))
        try SyncState(accountID: "acct", server: "postgresql://dpfs@127.0.0.1:1/sync", sealedServer: nil, deviceID: "dev",
                      epoch: 1, sealedKeys: sealedKeys, sealedPrivateKey: "", publicKey: "", lastSequence: 0, entries: [:],
                      roster: nil).save(in: directory)
        for account in ["a", "b", "c"] { try items.applySynchronized(item(account)) }
        let engine = try SyncEngine(directory: directory, device: device, items: items)

        roundEndsUnreachable(engine)
        #expect(engine.scans.load(ordering: .relaxed) == 1)
        #expect(try SyncState.load(from: directory)?.entries.values.filter(\.pending).count == 3)

        // Were the file read again, this round would fail on it.
        try AtomicFile.write(Array("not the state".utf8), to: SyncState.path(in: directory))
        roundEndsUnreachable(engine)
        roundEndsUnreachable(engine)
        #expect(engine.scans.load(ordering: .relaxed) == 1, "nothing changed: no item read")

        try items.applySynchronized(item("d"))
        roundEndsUnreachable(engine)
        #expect(engine.scans.load(ordering: .relaxed) == 2, "a write: the next round scans")
        #expect(try SyncState.load(from: directory)?.entries.count == 4, "and the changed state is written whole")
    }
}
