// Items moving to a new device (dpfs backup/restore): the export holds every item that
// may leave the device with its attributes, dates and data, never a ThisDeviceOnly
// one; an import keeps what was exported; a locked device exports nothing.
import DPFSProtocol
import Foundation
import Testing
@testable import ItemStore

@Suite struct TransferTests {
    func exported(_ t: TestDevice) throws -> [(attributes: [String: String], data: String)] {
        var items: [(attributes: [String: String], data: String)] = []
        try t.store.exportMigratableItems { attributes, data in items.append((attributes, String(decoding: data, as: UTF8.self))) }
        return items
    }

    @Test func exportHoldsMigratableItemsOnly() throws {
        let t = try TestDevice()
        for accessibility in Accessibility.allCases {
            #expect(t.add(["service": accessibility.rawValue, "accessible": accessibility.rawValue, "label": "L"],
                          data: "data-\(accessibility.rawValue)").status == 0)
        }
        let items = try exported(t)
        #expect(Set(items.map { $0.attributes["accessible"] ?? "" }) == ["WhenUnlocked", "AfterFirstUnlock", "Always"])
        for item in items {
            #expect(item.data == "data-\(item.attributes["service"] ?? "")")
            #expect(item.attributes["label"] == "L")
            #expect(item.attributes["accessGroup"] == "XXXXXXXXXX.com.example.app")
            #expect(item.attributes["created"].flatMap(Double.init) != nil)
        }
    }

    @Test func importKeepsAttributesAndDates() throws {
        let source = try TestDevice()
        #expect(source.add(["service": "mail", "account": "alice", "label": "Mail", "accessible": "AfterFirstUnlock"],
                           data: "hunter2").status == 0)
        let items = try exported(source)
        let target = try TestDevice()
        for item in items {
            let response = Array(item.data.utf8).withUnsafeBytes { target.store.importItem(item.attributes, data: $0) }
            #expect(response.status == 0)
        }
        #expect(try exported(target).map(\.attributes) == items.map(\.attributes))
        // Imported again: already there.
        let again = Array("x".utf8).withUnsafeBytes { target.store.importItem(items[0].attributes, data: $0) }
        #expect(again.status == SecStatus.duplicateItem)
    }

    @Test func importRefusesThisDeviceOnly() throws {
        let t = try TestDevice()
        let attributes = ["class": "genp", "service": "s", "account": "", "accessGroup": "XXXXXXXXXX.com.example.app",
                          "accessible": "WhenUnlockedThisDeviceOnly", "synchronizable": "no", "created": "1", "modified": "2"]
        let response = Array("x".utf8).withUnsafeBytes { t.store.importItem(attributes, data: $0) }
        #expect(response.status == SecStatus.param)
    }

    @Test func secureEnclaveKeysStayAndOrdinaryKeysMove() throws {
        let source = try TestDevice()
        let enclave = source.store.performKey(KeyRequest(operation: .generate, attributes: [
            "applicationTag": "0e", "tokenID": "secureEnclave", "accessible": "WhenUnlocked"], permanent: true))
        let ordinary = source.addOrdinaryKey(["applicationTag": "0a", "accessible": "WhenUnlocked"])
        #expect(enclave.status == 0 && ordinary.status == 0)
        let items = try exported(source)
        #expect(items.map { $0.attributes["applicationTag"] } == ["0a"], "only the ordinary key leaves")
        #expect(items.first?.attributes["publicKey"]?.isEmpty == false)
        let target = try TestDevice()
        for item in items {
            let response = Array(item.data.utf8).withUnsafeBytes { target.store.importItem(item.attributes, data: $0) }
            #expect(response.status == 0)
        }
        #expect(try exported(target).map(\.attributes) == items.map(\.attributes))
        var forged = try #require(items.first).attributes
        forged["tokenID"] = "secureEnclave"
        forged["applicationTag"] = "0f"
        let refused = Array("x".utf8).withUnsafeBytes { target.store.importItem(forged, data: $0) }
        #expect(refused.status == SecStatus.param)
    }

    @Test func aLockedDeviceExportsNothing() throws {
        let t = try TestDevice()
        t.add(["service": "afu", "accessible": "AfterFirstUnlock"])
        t.lock()
        #expect(throws: ItemExportError.self) { _ = try exported(t) }
    }
}
