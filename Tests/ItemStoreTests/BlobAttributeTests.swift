// Blob attributes (service, account, path, securityDomain) given as bytes: compared
// with text by their bytes, sealed with their type, returned in dataAttributes, and
// carried as bytes by an export and by sync.
import DPFSProtocol
import Foundation
@testable import ItemStore
import Testing

@Suite struct BlobAttributeTests {
    static let bytes = Data([0xff, 0x00, 0x6b])

    func add(_ t: TestDevice, text: [String: String], data: [String: Data]) -> KeychainResponse {
        var request = KeychainRequest(operation: .add, attributes: text, data: Data("secret".utf8), returning: "attributes")
        request.dataAttributes = data
        return t.store.perform(request)
    }

    func find(_ t: TestDevice, text: [String: String], data: [String: Data]? = nil) -> KeychainResponse {
        var request = KeychainRequest(operation: .find, attributes: text, returning: "attributes")
        request.dataAttributes = data
        return t.store.perform(request)
    }

    @Test func bytesAndTextCompareByTheirBytes() throws {
        let t = try TestDevice()
        let added = add(t, text: ["service": "s"], data: ["account": Data("k".utf8)])
        #expect(added.status == 0)
        #expect(added.items.first?.dataAttributes == ["account": Data("k".utf8)])
        #expect(added.items.first?.attributes?["account"] == nil)
        let found = find(t, text: ["service": "s", "account": "k"])
        #expect(found.status == 0)
        #expect(found.items.first?.dataAttributes == ["account": Data("k".utf8)])
        #expect(add(t, text: ["service": "s", "account": "k"], data: [:]).status == SecStatus.duplicateItem)
        try t.reopenStore()
        #expect(find(t, text: ["service": "s"], data: ["account": Data("k".utf8)]).items.first?.dataAttributes
                    == ["account": Data("k".utf8)])
    }

    @Test func badRequestsAreRefused() throws {
        let t = try TestDevice()
        #expect(add(t, text: ["service": "s"], data: ["label": Data([1])]).status == SecStatus.param)
        #expect(add(t, text: ["account": "a"], data: ["account": Data([1])]).status == SecStatus.param)
        #expect(add(t, text: ["class": "inet", "server": "h"], data: ["port": Data([1])]).status == SecStatus.param)
        #expect(t.find(["service": "s"]).status == SecStatus.itemNotFound)
    }

    @Test func exportAndSyncKeepTheType() throws {
        let source = try TestDevice(), target = try TestDevice(), peer = try TestDevice()
        #expect(add(source, text: ["accessible": "AfterFirstUnlock", "synchronizable": "yes"],
                    data: ["service": Self.bytes]).status == 0)
        var exported: [(attributes: [String: String], data: [UInt8])] = []
        try source.store.exportMigratableItems { exported.append(($0, Array($1))) }
        let item = try #require(exported.first)
        #expect(item.data.withUnsafeBytes { target.store.importItem(item.attributes, data: $0) }.status == 0)
        let imported = find(target, text: ["synchronizable": "yes"], data: ["service": Self.bytes])
        #expect(imported.items.first?.dataAttributes == ["service": Self.bytes])

        let identity = try #require(try source.store.synchronizableVersions().first?.identity)
        #expect(try source.store.holdsSynchronizable(identity: identity))
        let synced = try #require(try source.store.synchronizedItem(identity: identity))
        try peer.store.applySynchronized(synced)
        #expect(try peer.store.holdsSynchronizable(identity: identity))
        let received = find(peer, text: ["synchronizable": "yes"], data: ["service": Self.bytes])
        #expect(received.items.first?.dataAttributes == ["service": Self.bytes])
    }

    @Test func creatorAndTypeKeepTheirText() throws {
        let t = try TestDevice()
        #expect(t.add(["service": "s", "creator": "Creator Test", "type": "042"]).status == 0)
        let found = try #require(t.find(["creator": "Creator Test"], returning: "attributes").items.first?.attributes)
        #expect(found["creator"] == "Creator Test")
        #expect(found["type"] == "042")
        #expect(t.find(["type": "42"]).status == SecStatus.itemNotFound)
    }
}
