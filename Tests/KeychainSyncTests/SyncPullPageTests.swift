// A pull reads the server a page at a time and converges on more records than a page
// holds; a record larger than any item's is named in status; and a round whose only
// item writes are the pull's own (or that kept a newer local item) leaves nothing for
// the next round to scan, while an app's write during the pull still makes it scan.
// The server is a list of sealed records here (PulledRecordSource).
import DPFSProtocol
import DataProtection
import Foundation
import ItemStore
@testable import KeychainSync
import Synchronization
import TestSupport
import Testing

/// Sealed records in sequence order, answered a page at a time; each page's size is kept.
final class ListedRecords: PulledRecordSource {
    var records: [PulledRecord] = []
    var pages: [Int] = []

    func records(after sequence: Int, limit: Int) throws -> [PulledRecord] {
        let page = Array(records.filter { $0.sequence > sequence }.prefix(limit))
        pages.append(page.count)
        return page
    }
}

/// A server that ignores the cursor: every page is the first one (up to a bound, so
/// that a pull that would ask for ever ends for the test to fail).
final class CursorIgnoringRecords: PulledRecordSource {
    var records: [PulledRecord] = []
    var pages = 0

    func records(after sequence: Int, limit: Int) throws -> [PulledRecord] {
        pages += 1
        return pages > 50 ? [] : Array(records.prefix(limit))
    }
}

@Suite struct SyncPullPageTests {
    private let provisioned: ProvisionedDevice
    private let device: LockStateManager
    private let items: ItemStore
    private let engine: SyncEngine
    private let crypto = AccountCrypto(accountID: "acct", epoch: 1, key: SecureBuffer.random(count: AEAD.keySize),
                                       idKey: SecureBuffer.random(count: AEAD.keySize))
    private let start = Date().timeIntervalSince1970 - 1000

    init() throws {
        let made = try StoreDevice(prefix: "dpfs-syncpage")
        (provisioned, device, items) = (made.provisioned, made.device, made.items)
        let directory = made.directory
        let sealedKeys = try #require(SyncState.seal(crypto.keyPair(), purpose: "account-keys", accountID: "acct", device: device))
        try SyncState(accountID: "acct", server: "postgresql://dpfs@127.0.0.1:1/sync", sealedServer: nil, deviceID: "m8",
                      epoch: 1, sealedKeys: sealedKeys, sealedPrivateKey: "", publicKey: "", lastSequence: 0, entries: [:],
                      roster: nil).save(in: directory)
        engine = try SyncEngine(directory: directory, device: device, items: items)
    }

    private func attributes(_ account: String, modified: Double) -> [String: String] {
        ["class": "genp", "service": "page", "account": account, "accessGroup": "TEAM.com.example.mail",
         "accessible": "AfterFirstUnlock", "created": String(start), "modified": String(modified)]
    }

    private func identity(_ account: String) throws -> [UInt8] {
        try #require(ItemStore.syncIdentity(of: attributes(account, modified: start)))
    }

    /// `account`'s version by m1, sealed, at `sequence`.
    private func record(_ account: String, modified: Double, sequence: Int) throws -> PulledRecord {
        let recordID = crypto.recordID(of: try identity(account))
        let plaintext = RecordPlaintext(attributes: attributes(account, modified: modified), deleted: false, writer: "m1",
                                        secret: ProvisionedDevice.secret("pw-\(account)"))
        let payload = crypto.seal(plaintext.encoded(), recordID: recordID)
        return PulledRecord(recordID: recordID, epoch: 1, sequence: sequence, size: payload.count, payload: payload)
    }

    /// A round whose server part pulls `source` in pages of `pageSize`.
    private func round(_ source: ListedRecords, pageSize: Int = 3, during: () throws -> Void = {}) throws {
        _ = try engine.round { exchange, state in
            let complete = try exchange.pull(&state, from: source, pageSize: pageSize)
            try during()
            return !complete
        }
    }

    private var scans: Int { engine.scans.load(ordering: .relaxed) }

    @Test func aPullOfMoreRecordsThanAPageTakesThemAllInOrder() throws {
        defer { try? items.close() }
        let source = ListedRecords()
        // Record "a" twice: the later sequence's version is the one kept.
        source.records = try (1...10).map { try record("r\($0)", modified: start + 1, sequence: $0) }
            + [try record("r1", modified: start + 5, sequence: 11)]
        try round(source)
        #expect(source.pages == [3, 3, 3, 2], "pages of at most 3, until a short one")
        let state = try #require(try SyncState.load(from: provisioned.directory))
        #expect(state.lastSequence == 11)
        #expect(state.entries.count == 10 && state.entries.values.allSatisfy { !$0.pending && $0.writer == "m1" })
        #expect(try items.synchronizableVersions().count == 10)
        #expect(try items.synchronizedItem(identity: try identity("r1"))?.modified == start + 5, "the later sequence wins")
        #expect(try items.receivedSyncVersions().isEmpty, "noted, then forgotten once sync.json records them")
    }

    @Test func aFullPageThatMovesNothingEndsThePull() throws {
        defer { try? items.close() }
        let source = CursorIgnoringRecords()
        source.records = try (1...3).map { try record("r\($0)", modified: start + 1, sequence: $0) }
        var failure: (any Error)?
        _ = try engine.round { exchange, state in
            do { _ = try exchange.pull(&state, from: source, pageSize: 3) } catch { failure = error }
            return false
        }
        #expect(source.pages == 2, "the page after the first moved nothing, and the pull stopped there")
        #expect("\(failure.map { String(describing: $0) } ?? "none")".contains("at or before sequence 3"))
        #expect(try items.synchronizableVersions().count == 3, "what the first page held is taken")
    }

    @Test func aRecordLargerThanAnyIsNamedInStatus() throws {
        defer { try? items.close() }
        let source = ListedRecords()
        let big = RecordPlaintext.maxSealedSize + 1
        let oversized = crypto.recordID(of: try identity("r9"))
        source.records = [try record("r1", modified: start + 1, sequence: 1),
                          PulledRecord(recordID: oversized, epoch: 1, sequence: 2, size: big, payload: nil),
                          try record("r2", modified: start + 1, sequence: 3)]
        try round(source)
        let report = try engine.report()
        #expect(report.connection == "connected, 1 records refused as too large")
        let error = try #require(report.lastError)
        #expect(error.contains("\(oversized) (\(big) bytes, sequence 2)"), "\(error)")
        #expect(try items.synchronizableVersions().count == 2, "the records around it are taken")
        let saved = try #require(try SyncState.load(from: provisioned.directory))
        #expect(saved.refused?[oversized] == RefusedRecord(sequence: 2, size: big), "kept across a restart")

        // A later version of the record, one that opens, replaces it.
        source.records.append(try record("r9", modified: start + 1, sequence: 4))
        try round(source)
        #expect(try engine.report().connection == "connected")
        #expect(try engine.report().lastError == nil)
    }

    @Test func aRoundThatOnlyWroteWhatItPulledLeavesNoScan() throws {
        defer { try? items.close() }
        let source = ListedRecords()
        try round(source)
        #expect(scans == 1, "the first round compares every item")

        source.records = try (1...7).map { try record("r\($0)", modified: start + 1, sequence: $0) }
        try round(source)
        #expect(scans == 1, "nothing local changed since")
        try round(source)
        try round(source)
        #expect(scans == 1, "the pull's own writes are no local change")

        // A newer local version, written after the scan and before the pull's: it stays,
        // the pull commits nothing for it, and the next round scans for the app's write.
        source.records.append(try record("r1", modified: start + 20, sequence: 8))
        var afterLocalWrite = 0
        _ = try engine.round { exchange, state in
            try items.applySynchronized(SyncedItem(attributes: attributes("r1", modified: start + 50),
                                                   secret: ProvisionedDevice.secret("local")))
            afterLocalWrite = try items.currentGeneration()
            #expect(try exchange.pull(&state, from: source, pageSize: 3))
            return false
        }
        #expect(try items.currentGeneration() == afterLocalWrite, "a kept local item costs no commit")
        #expect(try items.synchronizedItem(identity: try identity("r1"))?.modified == start + 50)
        #expect(scans == 1)
        try round(source)
        #expect(scans == 2, "the local write is noticed")
        try round(source)
        #expect(scans == 2)

        // An app's write while the pull writes: the next round scans and sends it.
        source.records.append(try record("r9", modified: start + 1, sequence: 9))
        try round(source) {
            try items.applySynchronized(SyncedItem(attributes: attributes("r2", modified: start + 60),
                                                   secret: ProvisionedDevice.secret("local")))
        }
        #expect(scans == 2)
        try round(source)
        #expect(scans == 3, "a write during the pull is noticed")
        let state = try #require(try SyncState.load(from: provisioned.directory))
        #expect(state.entries[crypto.recordID(of: try identity("r2"))]?.pending == true)
    }
}
