// Add, find, update and delete of generic passwords, with Apple's statuses.
import DPFSProtocol
import Foundation
import Testing
@testable import ItemStore

@Suite struct ItemLifecycleTests {
    let mail = ["service": "mail", "account": "alice"]

    @Test func addThenFindReturnsTheData() throws {
        let t = try TestDevice()
        #expect(t.add(mail, data: "hunter2").status == 0)
        #expect(t.secret(mail) == "hunter2")
        #expect(t.secret(["service": "mail"]) == "hunter2")
    }

    @Test func addingTheSameIdentityTwiceIsADuplicate() throws {
        let t = try TestDevice()
        #expect(t.add(mail).status == 0)
        #expect(t.add(mail, data: "other").status == SecStatus.duplicateItem)
        // Accessibility and label are not part of the identity.
        #expect(t.add(mail.merging(["accessible": "Always", "label": "x"]) { $1 }).status == SecStatus.duplicateItem)
        #expect(t.secret(mail) == "secret")
        // Another account is another item.
        #expect(t.add(["service": "mail", "account": "bob"]).status == 0)
    }

    @Test func findWithoutMatchIsItemNotFound() throws {
        let t = try TestDevice()
        #expect(t.find(mail).status == SecStatus.itemNotFound)
        t.add(mail)
        #expect(t.find(["service": "mail", "account": "bob"]).status == SecStatus.itemNotFound)
        #expect(t.find(["service": "mail", "label": "nope"]).status == SecStatus.itemNotFound)
    }

    @Test func limitOneByDefaultAndAllOnRequest() throws {
        let t = try TestDevice()
        for name in ["a", "b", "c"] { t.add(["service": "web", "account": name], data: name) }
        let one = t.find(["service": "web"])
        #expect(one.items.count == 1)
        #expect(one.items.first?.data == Data("a".utf8))
        let all = t.find(["service": "web"], limit: "all")
        #expect(all.items.compactMap { $0.data.map { String(decoding: $0, as: UTF8.self) } } == ["a", "b", "c"])
        #expect(t.find(["service": "web"], limit: "many").status == SecStatus.param)
    }

    @Test func returnDataAttributesOrBoth() throws {
        let t = try TestDevice()
        t.add(mail.merging(["label": "Mail"]) { $1 }, data: "pw")
        let data = try #require(t.find(mail, returning: "data").items.first)
        #expect(data.data == Data("pw".utf8) && data.attributes == nil)
        let attributes = try #require(t.find(mail, returning: "attributes").items.first)
        #expect(attributes.data == nil)
        let values = try #require(attributes.attributes)
        #expect(values["service"] == "mail" && values["account"] == "alice" && values["label"] == "Mail")
        #expect(values["class"] == "genp" && values["accessible"] == "WhenUnlocked" && values["synchronizable"] == "no")
        #expect(values["accessGroup"] == "XXXXXXXXXX.com.example.app")
        let both = try #require(t.find(mail, returning: "both").items.first)
        #expect(both.data == Data("pw".utf8) && both.attributes?["label"] == "Mail")
        #expect(t.find(mail, returning: "everything").status == SecStatus.param)
    }

    @Test func addCanReturnTheNewItem() throws {
        let t = try TestDevice()
        let response = t.add(mail, data: "pw", returning: "attributes")
        #expect(response.items.first?.attributes?["account"] == "alice")
        #expect(t.add(["service": "x"], limit: "all").status == SecStatus.param)
    }

    @Test func datesAreKeptAndReturned() throws {
        let t = try TestDevice()
        t.add(mail)
        let before = try #require(t.find(mail, returning: "attributes").items.first?.attributes)
        let created = try #require(before["creationDate"])
        #expect(before["modificationDate"] == created)
        #expect(try Date(created, strategy: .iso8601.year().month().day().time(includingFractionalSeconds: true)).timeIntervalSinceNow > -60)
        Thread.sleep(forTimeInterval: 0.01)
        #expect(t.update(mail, to: ["label": "new"]).status == 0)
        let after = try #require(t.find(mail, returning: "attributes").items.first?.attributes)
        #expect(after["creationDate"] == created)
        #expect(try #require(after["modificationDate"]) > created)
    }

    @Test func updateChangesDataAndAttributesOfEveryMatch() throws {
        let t = try TestDevice()
        t.add(["service": "web", "account": "a"], data: "1")
        t.add(["service": "web", "account": "b"], data: "2")
        t.add(["service": "other", "account": "a"], data: "3")
        #expect(t.update(["service": "web"], newData: "new").status == 0)
        #expect(t.secret(["service": "web", "account": "a"]) == "new")
        #expect(t.secret(["service": "web", "account": "b"]) == "new")
        #expect(t.secret(["service": "other"]) == "3")
        #expect(t.update(["service": "web"], to: ["label": "L", "service": "site"]).status == 0)
        #expect(t.find(["service": "web"]).status == SecStatus.itemNotFound)
        let moved = t.find(["service": "site", "label": "L"], limit: "all", returning: "both")
        #expect(moved.items.count == 2)
        #expect(moved.items.allSatisfy { $0.data == Data("new".utf8) })
        #expect(t.update(["service": "site", "account": "b"], to: ["account": "c"], newData: "both").status == 0)
        #expect(t.secret(["service": "site", "account": "c"]) == "both")
    }

    @Test func updateRefusesReturnOptionsAndEmptyChanges() throws {
        let t = try TestDevice()
        t.add(mail)
        #expect(t.update(mail, newData: "x", returning: "data").status == SecStatus.param)
        #expect(t.update(mail, newData: "x", returning: "attributes").status == SecStatus.param)
        #expect(t.update(mail, newData: "x", limit: "one").status == SecStatus.param)
        #expect(t.update(mail).status == SecStatus.param)
        #expect(t.update(mail, to: ["class": "inet"]).status == SecStatus.param)
        #expect(t.update(mail, to: ["server": "x"]).status == SecStatus.param)
        #expect(t.update(["service": "none"], newData: "x").status == SecStatus.itemNotFound)
        #expect(t.secret(mail) == "secret")
    }

    @Test func updateThatWouldMakeTwoItemsAlikeChangesNothing() throws {
        let t = try TestDevice()
        t.add(["service": "s", "account": "a"], data: "1")
        t.add(["service": "s", "account": "b"], data: "2")
        #expect(t.update(["service": "s"], to: ["account": "same"], newData: "x").status == SecStatus.duplicateItem)
        #expect(t.secret(["service": "s", "account": "a"]) == "1")
        #expect(t.secret(["service": "s", "account": "b"]) == "2")
    }

    @Test func deleteRemovesEveryMatch() throws {
        let t = try TestDevice()
        for name in ["a", "b"] { t.add(["service": "web", "account": name]) }
        t.add(["service": "keep"])
        #expect(t.delete(["service": "web"]).status == 0)
        #expect(t.find(["service": "web"]).status == SecStatus.itemNotFound)
        #expect(t.delete(["service": "web"]).status == SecStatus.itemNotFound)
        #expect(t.secret(["service": "keep"]) == "secret")
        #expect(t.store.perform(KeychainRequest(operation: .delete, attributes: ["service": "keep"],
                                                returning: "data")).status == SecStatus.param)
    }

    @Test func binaryAndEmptyDataSurviveByteExact() throws {
        let t = try TestDevice()
        let bytes = Data((0...255).map { UInt8($0) } + [0, 0, 0xff])
        #expect(t.store.perform(KeychainRequest(operation: .add, attributes: ["service": "bin"], data: bytes)).status == 0)
        #expect(t.find(["service": "bin"]).items.first?.data == bytes)
        #expect(t.add(["service": "empty"], data: nil).status == 0)
        #expect(t.find(["service": "empty"]).items.first?.data == Data())
    }

    @Test func anItemHoldsAtMost64KiB() throws {
        // What a backup carries and the CLI reads: more would be kept but never leave.
        let t = try TestDevice()
        let most = Data(repeating: 1, count: ControlProtocol.maxItemDataSize)
        let over = Data(repeating: 1, count: ControlProtocol.maxItemDataSize + 1)
        #expect(t.store.perform(KeychainRequest(operation: .add, attributes: ["service": "most"], data: most)).status == 0)
        #expect(t.store.perform(KeychainRequest(operation: .add, attributes: ["service": "over"], data: over)).status
                == SecStatus.param)
        let update = KeychainRequest(operation: .update, attributes: ["service": "most"], newData: over)
        #expect(t.store.perform(update).status == SecStatus.param)
        #expect(t.find(["service": "most"]).items.first?.data == most)
    }

    @Test func unknownOrMisplacedAttributesAreParamErrors() throws {
        let t = try TestDevice()
        #expect(t.add(["service": "s", "colour": "red"]).status == SecStatus.param)
        #expect(t.add(["service": "s", "server": "host"]).status == SecStatus.param)
        #expect(t.add(["class": "cert"]).status == SecStatus.param)
        #expect(t.add(["service": "s", "accessible": "Sometimes"]).status == SecStatus.param)
        #expect(t.add(["service": "s", "synchronizable": "maybe"]).status == SecStatus.param)
        #expect(KeychainAttributes.problem(in: ["port": "99999"], itemClass: "inet") != nil)
        #expect(KeychainAttributes.problem(in: ["service": "s"]) == nil)
    }

    @Test func itemsOutliveTheStore() throws {
        let t = try TestDevice()
        t.add(mail, data: "kept")
        try t.reopenStore()
        #expect(t.secret(mail) == "kept")
    }
}
