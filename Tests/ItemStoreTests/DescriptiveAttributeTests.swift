// kSecAttrDescription, Comment, Generic, Creator, Type, IsInvisible and IsNegative:
// stored sealed, returned, matched (an item without one never matches a query naming
// it), changed by update without touching the others, refused on a class without
// them, and carried by export/import and by sync.
import DPFSProtocol
import DataProtection
import Foundation
import Testing
@testable import ItemStore

@Suite struct DescriptiveAttributeTests {
    static let described = ["service": "mail", "account": "ann", "description": "Mail password",
                            "comment": "set up by the tests", "generic": "00FF10", "creator": "1634758764",
                            "type": "42", "isInvisible": "true", "isNegative": "no"]

    @Test func aFindReturnsThemCanonical() throws {
        let t = try TestDevice()
        #expect(t.add(Self.described).status == 0)
        let found = try #require(t.find(["service": "mail"], returning: "attributes").items.first?.attributes)
        #expect(found["description"] == "Mail password")
        #expect(found["comment"] == "set up by the tests")
        #expect(found["generic"] == "00ff10")
        #expect(found["creator"] == "1634758764")
        #expect(found["type"] == "42")
        #expect(found["isInvisible"] == "yes")
        #expect(found["isNegative"] == "no")
        let plain = try #require(t.add(["service": "other"], returning: "attributes").items.first?.attributes)
        #expect(DescriptiveAttribute.allCases.allSatisfy { plain[$0.rawValue] == nil })
    }

    @Test func aQueryNamingOneMatchesOnlyItemsWithThatValue() throws {
        let t = try TestDevice()
        #expect(t.add(["service": "s", "account": "first"], data: "one").status == 0)
        #expect(t.add(["service": "s", "account": "second", "comment": "wanted"], data: "two").status == 0)
        #expect(t.add(["service": "s", "account": "third", "comment": "other"], data: "three").status == 0)
        // Limit one must not stop at the first row SQL returns, which has no comment.
        #expect(t.secret(["service": "s", "comment": "wanted"]) == "two")
        #expect(t.find(["service": "s", "comment": "wanted"], limit: "all").items.count == 1)
        #expect(t.find(["service": "s", "comment": "none such"]).status == SecStatus.itemNotFound)
        #expect(t.find(["service": "s", "isInvisible": "no"]).status == SecStatus.itemNotFound)
        #expect(t.delete(["service": "s", "comment": "other"]).status == 0)
        #expect(t.find(["service": "s"], limit: "all").items.count == 2)
    }

    @Test func anUpdateChangesOnlyWhatItNames() throws {
        let t = try TestDevice()
        #expect(t.add(Self.described).status == 0)
        #expect(t.update(["service": "mail", "comment": "set up by the tests"], to: ["comment": "changed", "isNegative": "yes"]).status == 0)
        let found = try #require(t.find(["service": "mail"], returning: "attributes").items.first?.attributes)
        #expect(found["comment"] == "changed")
        #expect(found["isNegative"] == "yes")
        #expect(found["description"] == "Mail password")
        #expect(found["generic"] == "00ff10")
        #expect(t.secret(["service": "mail", "comment": "changed"]) == "secret")
    }

    @Test func badValuesAndForeignClassesAreRefused() throws {
        let t = try TestDevice()
        for bad in [["generic": "abc"], ["generic": "zz"], ["isInvisible": "maybe"], ["class": "inet", "server": "h", "generic": "00"],
                    ["class": "keys", "comment": "x"]] {
            #expect(t.add(["service": "s"].merging(bad) { $1 }).status == SecStatus.param, "\(bad)")
        }
        #expect(t.add(["class": "inet", "server": "h", "comment": "ok", "creator": "7"]).status == 0)
        #expect(t.find(["service": "s"]).status == SecStatus.itemNotFound)
    }

    @Test func theyAreSealedNotStoredInClear() throws {
        let t = try TestDevice()
        let marker = "COMMENT-marker-51a7e3"
        #expect(t.add(["service": "s", "comment": marker, "description": marker + "-d"]).status == 0)
        #expect(AttributePrivacyTests.leaked([marker], in: t.databaseFiles()).isEmpty)
    }

    @Test func exportAndImportCarryThem() throws {
        let source = try TestDevice(), target = try TestDevice()
        #expect(source.add(Self.described.merging(["accessible": "AfterFirstUnlock"]) { $1 }).status == 0)
        var exported: [(attributes: [String: String], data: [UInt8])] = []
        try source.store.exportMigratableItems { exported.append(($0, Array($1))) }
        let item = try #require(exported.first)
        #expect(item.attributes["comment"] == "set up by the tests")
        #expect(item.data.withUnsafeBytes { target.store.importItem(item.attributes, data: $0) }.status == 0)
        #expect(target.find(["service": "mail", "generic": "00ff10", "type": "42"]).status == 0)
    }

    @Test func syncCarriesThem() throws {
        let a = try TestDevice(), b = try TestDevice()
        #expect(a.add(Self.described.merging(["synchronizable": "yes", "accessible": "AfterFirstUnlock"]) { $1 }).status == 0)
        let identity = try #require(try a.store.synchronizableVersions().first?.identity)
        let item = try #require(try a.store.synchronizedItem(identity: identity))
        try b.store.applySynchronized(item)
        let received = try #require(b.find(["service": "mail", "synchronizable": "yes", "description": "Mail password"],
                                           returning: "attributes").items.first?.attributes)
        #expect(received["creator"] == "1634758764")
        #expect(received["isInvisible"] == "yes")
    }
}
