// Every keychain write bumps the item store's generation and mirrors it into the
// device's record in the secret store; an older database is refused (dpfs(5)).
import DataProtection
import Foundation
import Testing
@testable import ItemStore

@Suite struct GenerationTests {
    private func recorded(_ t: TestDevice) throws -> Int {
        try #require(try t.device.deviceRecord()).keychainGeneration
    }

    @Test func everyWriteIsMirroredIntoTheRecord() throws {
        let t = try TestDevice()
        let before = try recorded(t)
        #expect(t.add(["service": "mail", "account": "bob"]).status == 0)
        #expect(try recorded(t) == before + 1)
        #expect(t.add(["service": "mail", "account": "bob"]).status == SecStatus.duplicateItem)
        #expect(try recorded(t) == before + 1, "a refused write commits nothing")
        #expect(t.store.perform(KeychainRequest(operation: .delete, app: nil, attributes: ["service": "mail"])).status == 0)
        #expect(try recorded(t) == before + 2)
        try t.reopenStore()
    }

    @Test func aDatabaseOlderThanTheRecordIsRefused() throws {
        let t = try TestDevice()
        #expect(t.add(["service": "mail", "account": "bob"]).status == 0)
        try DeviceRecordStore.update(for: t.device.deviceUUID, in: t.device.secretStore) { $0.keychainGeneration += 2 }
        #expect(throws: DeviceRecordError.self) { try t.reopenStore() }
        #expect(throws: DeviceRecordError.self) {
            try ItemStore.checkGeneration(path: t.directory.itemStorePath, device: t.device)
        }
    }
}
