// An erase after too many failed passcodes gives the device fresh class keys, and the
// items sealed under the old ones are deleted (dpfs(1), unlock): also when the daemon
// was killed between the erase and the delete, and when the delete itself failed.
import DPFSProtocol
import DataProtection
import Foundation
import Testing
@testable import ItemStore

@Suite struct EraseTests {
    private static let mail = ["service": "mail", "account": "bob"]

    private func find(_ store: ItemStore, _ attributes: [String: String]) -> KeychainResponse {
        store.perform(KeychainRequest(operation: .find, app: nil, attributes: attributes))
    }

    private func add(_ store: ItemStore, _ attributes: [String: String], data: String) -> KeychainResponse {
        store.perform(KeychainRequest(operation: .add, app: nil, attributes: attributes, data: Data(data.utf8)))
    }

    private func wrongUnlock(_ device: LockStateManager) {
        #expect(throws: LockError.erased) { try device.unlock(passcode: TestDevice.secret("0000")) }
    }

    @Test func anEraseNoStoreHeardOfIsFinishedWhenTheStoreOpens() throws {
        let t = try TestDevice(eraseAfter: 1)
        #expect(t.add(Self.mail, data: "before").status == 0)
        // As a daemon killed between the erase and the delete leaves the device: the
        // keybag saved erased, the items still there (here, another boot of the device
        // that no store listens to makes the erase).
        let erasing = try LockStateManager(directory: t.directory, gracePeriod: 0)
        wrongUnlock(erasing)
        let rebooted = try LockStateManager(directory: t.directory, gracePeriod: 0)
        #expect(rebooted.status().erased)
        let store = try ItemStore(path: t.directory.itemStorePath, device: rebooted)
        let found = find(store, Self.mail)
        #expect(found.status == SecStatus.itemNotFound, "\(found.message ?? "")")
        let added = add(store, Self.mail, data: "after")
        #expect(added.status == 0, "no item of the old keys is in the way: \(added.message ?? "")")
    }

    @Test func anEraseCompletedAtBootDeletesTheItems() throws {
        let t = try TestDevice(eraseAfter: 3)
        #expect(t.add(Self.mail, data: "before").status == 0)
        // The attempt that reached the limit was counted, and its process died before
        // the erase: the boot completes it.
        try DeviceRecordStore.update(for: t.device.deviceUUID, in: t.device.secretStore) { $0.failedAttempts = 3 }
        let rebooted = try LockStateManager(directory: t.directory, gracePeriod: 0)
        #expect(rebooted.status().erased)
        let store = try ItemStore(path: t.directory.itemStorePath, device: rebooted)
        #expect(find(store, Self.mail).status == SecStatus.itemNotFound)
        #expect(add(store, Self.mail, data: "after").status == 0)
    }

    @Test func itemsAddedAfterTheEraseOutliveAReopen() throws {
        let t = try TestDevice(eraseAfter: 1)
        #expect(t.add(Self.mail, data: "before").status == 0)
        t.lock()
        wrongUnlock(t.device)
        #expect(t.find(Self.mail).status == SecStatus.itemNotFound)
        #expect(t.add(Self.mail, data: "after").status == 0)
        try t.reopenStore()
        #expect(t.secret(Self.mail) == "after", "the erase is finished once, not at every open")
        let rebooted = try LockStateManager(directory: t.directory, gracePeriod: 0)
        let store = try ItemStore(path: t.directory.itemStorePath, device: rebooted)
        #expect(find(store, Self.mail).status == 0)
    }

    @Test func aDeleteThatFailsAtTheEraseIsTriedAgainBeforeTheNextRequest() throws {
        let t = try TestDevice(eraseAfter: 1)
        #expect(t.add(Self.mail, data: "before").status == 0)
        // A delete SQLite refuses, as a full disk or an I/O error would make it fail.
        try t.tamper("CREATE TRIGGER refuse_delete BEFORE DELETE ON items BEGIN SELECT RAISE(ABORT, 'refused'); END")
        t.lock()
        wrongUnlock(t.device)
        let refused = t.find(Self.mail)
        #expect(refused.status == SecStatus.io, "never an item no key opens: \(refused.message ?? "")")
        #expect(refused.message?.contains("erase") == true, "\(refused.message ?? "")")
        try t.tamper("DROP TRIGGER refuse_delete")
        let found = t.find(Self.mail)
        #expect(found.status == SecStatus.itemNotFound, "\(found.message ?? "")")
        #expect(t.add(Self.mail, data: "after").status == 0)
    }
}
