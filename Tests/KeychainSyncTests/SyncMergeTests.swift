// A pulled record against the item as it is when it is written: an app's write made
// after the round's scan is newer than what the scan saw, and an older remote version
// (an update or a deletion) must not replace it. A record that carries the very item
// this device holds (a device restored from another's backup joins) is the same
// version: taken as known, sent by nobody. A tie between different items is decided
// by the writer id.
import DPFSProtocol
import DataProtection
import Foundation
import ItemStore
@testable import KeychainSync
import TestSupport
import Testing

@Suite struct SyncMergeTests {
    /// A device in an account, its engine not started: the exchange is driven by hand.
    final class Member {
        let provisioned: ProvisionedDevice
        let items: ItemStore
        var exchange: Exchange
        var state: SyncState

        init(deviceID: String) throws {
            let made = try StoreDevice(prefix: "dpfs-syncmerge")
            (provisioned, items) = (made.provisioned, made.items)
            let engine = try SyncEngine(directory: made.directory, device: made.device, items: items)
            let crypto = AccountCrypto(accountID: "acct", epoch: 1, key: ProvisionedDevice.secret(String(repeating: "k", count: 32)),
                                       idKey: ProvisionedDevice.secret(String(repeating: "i", count: 32)))
            exchange = Exchange(engine: engine, crypto: crypto)
            state = SyncState(accountID: "acct", server: "", sealedServer: nil, deviceID: deviceID, epoch: 1, sealedKeys: "",
                              sealedPrivateKey: "", publicKey: "", lastSequence: 0, entries: [:], roster: nil)
        }

        deinit { try? items.close() }

        func write(_ operation: KeychainRequest.Operation, _ data: String = "") throws {
            let attributes = ["class": "genp", "service": "S", "account": "A", "synchronizable": "yes"]
            let request = switch operation {
            case .add: KeychainRequest(operation: .add, attributes: attributes.merging(["accessible": "AfterFirstUnlock"]) { $1 },
                                       data: Data(data.utf8))
            case .update: KeychainRequest(operation: .update, attributes: attributes, newData: Data(data.utf8))
            default: KeychainRequest(operation: operation, attributes: attributes)
            }
            try #require(items.perform(request).status == SecStatus.success)
        }

        var version: SyncItemVersion { get throws { try #require(try items.synchronizableVersions().first) } }
        var recordID: String { get throws { exchange.crypto.recordID(of: try version.identity) } }

        var secret: String? {
            get throws {
                guard let item = try items.synchronizedItem(identity: try version.identity) else { return nil }
                return String(decoding: item.secret.bytes, as: UTF8.self)
            }
        }

        /// This device's item as another device's record of it.
        func record(writer: String, modified: Double? = nil, data: String? = nil, deleted: Bool = false) throws -> RecordPlaintext {
            let item = try #require(try items.synchronizedItem(identity: try version.identity))
            var attributes = item.attributes
            if let modified { attributes["modified"] = String(modified) }
            return RecordPlaintext(attributes: attributes, deleted: deleted, writer: writer,
                                   secret: deleted ? nil : data.map(ProvisionedDevice.secret) ?? item.secret)
        }

        func merge(_ record: RecordPlaintext) throws {
            let id = try recordID
            #expect(try exchange.merge(record, recordID: id, &state))
        }
    }

    /// The item added and scanned at t0, then an app's update at t1 (the round's pull
    /// still to come), and another device's version dated between the two.
    private func raced(deleted: Bool) throws -> Member {
        let member = try Member(deviceID: "dev-m")
        try member.write(.add, "scanned")
        try member.exchange.scan(&member.state)
        let scanned = try member.version.modified
        try member.write(.update, "local")
        let updated = try member.version.modified
        try #require(updated > scanned)
        try member.merge(try member.record(writer: "dev-z", modified: (scanned + updated) / 2, data: "remote", deleted: deleted))
        return member
    }

    @Test func anOlderRemoteUpdateLeavesALocalWriteMadeAfterTheScan() throws {
        let member = try raced(deleted: false)
        #expect(try member.secret == "local")
        // The next round's scan sends the local version.
        try member.exchange.scan(&member.state)
        let entry = try #require(member.state.entries[try member.recordID])
        let updated = try member.version.modified
        #expect(entry.pending && entry.writer == "dev-m" && entry.modified == updated)
    }

    @Test func anOlderRemoteDeletionLeavesALocalWriteMadeAfterTheScan() throws {
        let member = try raced(deleted: true)
        #expect(try member.secret == "local")
        try member.exchange.scan(&member.state)
        let entry = try #require(member.state.entries[try member.recordID])
        #expect(entry.pending && !entry.deleted && entry.writer == "dev-m")
    }

    @Test func aLocalDeleteMadeAfterTheScanIsNotUndoneByARemoteUpdate() throws {
        let member = try Member(deviceID: "dev-m")
        try member.write(.add, "scanned")
        try member.exchange.scan(&member.state)
        let id = try member.recordID
        let remote = try member.record(writer: "dev-z", modified: try member.version.modified + 1, data: "remote")
        try member.write(.delete)
        #expect(try member.exchange.merge(remote, recordID: id, &member.state))
        #expect(try member.items.synchronizableVersions().isEmpty, "the app's delete stands")
        try member.exchange.scan(&member.state)
        let entry = try #require(member.state.entries[id])
        #expect(entry.pending && entry.deleted && entry.writer == "dev-m" && entry.modified >= remote.modified)
    }

    @Test func aNewerRemoteUpdateStillReplacesTheItem() throws {
        let member = try Member(deviceID: "dev-m")
        try member.write(.add, "scanned")
        try member.exchange.scan(&member.state)
        try member.merge(try member.record(writer: "dev-a", modified: try member.version.modified + 10, data: "remote"))
        #expect(try member.secret == "remote")
    }

    @Test func theSameItemFromAnotherWriterIsKnownAndNotSent() throws {
        // dev-z's scan made it its own pending version; dev-a's record is the same item.
        let member = try Member(deviceID: "dev-z")
        try member.write(.add, "restored")
        try member.exchange.scan(&member.state)
        try member.merge(try member.record(writer: "dev-a"))
        let entry = try #require(member.state.entries[try member.recordID])
        #expect(!entry.pending, "an identical version is not sent")
        #expect(entry.writer == "dev-a")
        try member.exchange.scan(&member.state)
        #expect(member.state.entries[try member.recordID]?.pending == false)
    }

    @Test func aTieBetweenDifferentItemsGoesToTheGreaterWriter() throws {
        let lower = try Member(deviceID: "dev-z")
        try lower.write(.add, "mine")
        try lower.exchange.scan(&lower.state)
        try lower.merge(try lower.record(writer: "dev-a", data: "theirs"))
        #expect(try lower.secret == "mine")
        #expect(lower.state.entries[try lower.recordID]?.pending == true)

        let greater = try Member(deviceID: "dev-a")
        try greater.write(.add, "mine")
        try greater.exchange.scan(&greater.state)
        try greater.merge(try greater.record(writer: "dev-z", data: "theirs"))
        #expect(try greater.secret == "theirs")
        #expect(greater.state.entries[try greater.recordID]?.pending == false)
    }
}
