// kSecAttrSynchronizable: part of the identity, "no" unless a query says otherwise.
import DPFSProtocol
import Foundation
import Testing
@testable import ItemStore

@Suite struct SynchronizableTests {
    @Test func queriesSeeLocalItemsUnlessTheyAsk() throws {
        let t = try TestDevice()
        #expect(t.add(["service": "s", "synchronizable": "yes"], data: "cloud").status == 0)
        #expect(t.add(["service": "s"], data: "local").status == 0)
        #expect(t.add(["service": "s", "synchronizable": "yes"]).status == SecStatus.duplicateItem)
        #expect(t.find(["service": "s"], limit: "all").items.compactMap(\.data) == [Data("local".utf8)])
        #expect(t.find(["service": "s", "synchronizable": "yes"], limit: "all").items.compactMap(\.data) == [Data("cloud".utf8)])
        #expect(t.find(["service": "s", "synchronizable": "any"], limit: "all").items.count == 2)
        #expect(t.delete(["service": "s"]).status == 0)
        #expect(t.find(["service": "s", "synchronizable": "any"], limit: "all").items.count == 1)
    }

    @Test func synchronizableItemsCannotBeThisDeviceOnly() throws {
        let t = try TestDevice()
        for accessibility in Accessibility.allCases {
            let status = t.add(["service": accessibility.rawValue, "synchronizable": "yes",
                                "accessible": accessibility.rawValue]).status
            #expect(status == (accessibility.isThisDeviceOnly ? SecStatus.param : 0), "\(accessibility)")
        }
        #expect(t.add(["service": "any", "synchronizable": "any"]).status == SecStatus.param)
        t.add(["service": "local", "accessible": "AlwaysThisDeviceOnly"])
        #expect(t.update(["service": "local"], to: ["synchronizable": "yes"]).status == SecStatus.param)
        #expect(t.update(["service": "Always", "synchronizable": "yes"],
                         to: ["accessible": "AlwaysThisDeviceOnly"]).status == SecStatus.param)
        #expect(t.update(["service": "Always", "synchronizable": "yes"], to: ["synchronizable": "no"]).status == 0)
        #expect(t.find(["service": "Always"]).status == 0)
    }
}
