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
        #expect(add(t, text: ["service": "s"], data: ["accessGroup": Data([1])]).status == SecStatus.param)
        var textAccount = KeychainRequest(operation: .add, attributes: ["service": "s"], data: Data())
        textAccount.textAttributes = ["account": "a"]
        #expect(t.store.perform(textAccount).status == SecStatus.param)
        var twice = KeychainRequest(operation: .add, attributes: ["service": "s", "generic": "00"], data: Data())
        twice.textAttributes = ["generic": "g"]
        #expect(t.store.perform(twice).status == SecStatus.param)
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

    /// Label, description and comment given as bytes, generic given as text: their
    /// types survive a reopened store, an export and import, and sync.
    @Test func sealedAttributesKeepTheirTypeEverywhere() throws {
        let source = try TestDevice(), target = try TestDevice(), peer = try TestDevice()
        let data = ["label": Self.bytes, "description": Data("d".utf8), "comment": Data()]
        var request = KeychainRequest(operation: .add, attributes: ["service": "s", "accessible": "AfterFirstUnlock",
                                                                    "synchronizable": "yes"],
                                      data: Data("secret".utf8))
        request.dataAttributes = data
        request.textAttributes = ["generic": "g"]
        #expect(source.store.perform(request).status == 0)
        func check(_ t: TestDevice, _ what: Comment) {
            var find = KeychainRequest(operation: .find, attributes: ["synchronizable": "yes", "description": "d",
                                                                      "generic": "67"],
                                       returning: "attributes")
            find.dataAttributes = ["label": Self.bytes]
            let item = t.store.perform(find).items.first
            #expect(item?.dataAttributes == data, what)
            #expect(item?.textAttributes == ["generic": "g"], what)
            #expect(item?.attributes?["label"] == nil && item?.attributes?["generic"] == nil, what)
        }
        check(source, "added")
        try source.reopenStore()
        check(source, "reopened")

        var exported: [(attributes: [String: String], data: [UInt8])] = []
        try source.store.exportMigratableItems { exported.append(($0, Array($1))) }
        let item = try #require(exported.first)
        #expect(item.data.withUnsafeBytes { target.store.importItem(item.attributes, data: $0) }.status == 0)
        check(target, "imported")

        let identity = try #require(try source.store.synchronizableVersions().first?.identity)
        try peer.store.applySynchronized(try #require(try source.store.synchronizedItem(identity: identity)))
        check(peer, "synchronized")
    }

    @Test func serverGivenAsBytesIsTheIdentityOfItsText() throws {
        let t = try TestDevice()
        #expect(add(t, text: ["class": "inet", "account": "a"], data: ["server": Data("h".utf8)]).status == 0)
        #expect(t.add(["class": "inet", "account": "a", "server": "h"]).status == SecStatus.duplicateItem)
        let found = find(t, text: ["class": "inet", "server": "h", "hostOrSubdomainOf": "h"])
        #expect(found.items.first?.dataAttributes == ["server": Data("h".utf8)])
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
