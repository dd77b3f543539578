// An access control asks this device's user, whom no other device can ask: as on iOS,
// no add or update makes an item both synchronizable and access-controlled
// (errSecParam, nothing changed), and a received record never takes an access control
// away from the item it replaces.
import DPFSProtocol
import DataProtection
import Foundation
import Testing
@testable import ItemStore

@Suite struct SynchronizableAccessControlTests {
    static let presence = String(AccessControlFlags.userPresence.rawValue)
    static let currentSet = String(AccessControlFlags.biometryCurrentSet.rawValue)

    func readsWithoutAsking(_ t: TestDevice, _ attributes: [String: String]) -> Bool {
        var request = KeychainRequest(operation: .find, attributes: attributes, returning: "data")
        request.authentication = KeychainAuthentication(interaction: .fail)
        return t.store.perform(request).status == 0
    }

    @Test func anAddWithBothIsRefused() throws {
        let t = try TestDevice()
        try t.store.user.enroll(type: .faceID)
        for flags in [Self.presence, Self.currentSet] {
            #expect(t.add(["service": "s", "synchronizable": "yes", "accessControl": flags]).status == SecStatus.param)
        }
        #expect(t.find(["service": "s", "synchronizable": "any"]).status == SecStatus.itemNotFound)
        #expect(t.add(["service": "s", "accessControl": Self.presence]).status == 0)
        #expect(t.add(["service": "s", "synchronizable": "yes"]).status == 0)
    }

    @Test func anUpdateMayNotMakeThePair() throws {
        let t = try TestDevice()
        #expect(t.add(["service": "local", "accessControl": Self.presence], data: "asks").status == 0)
        #expect(t.add(["service": "cloud", "synchronizable": "yes"], data: "open").status == 0)
        #expect(t.add(["service": "plain"], data: "open").status == 0)

        try t.store.user.respond(.passcode, times: 1, passcode: TestDevice.secret(TestDevice.passcode))
        #expect(t.update(["service": "local"], to: ["synchronizable": "yes"]).status == SecStatus.param)
        #expect(t.update(["service": "cloud", "synchronizable": "yes"], to: ["accessControl": Self.presence]).status
                == SecStatus.param)
        #expect(t.update(["service": "plain"], to: ["synchronizable": "yes", "accessControl": Self.presence]).status
                == SecStatus.param)

        #expect(t.find(["service": "local", "synchronizable": "yes"]).status == SecStatus.itemNotFound)
        let localOpens = readsWithoutAsking(t, ["service": "local"])
        #expect(!localOpens)
        let cloudOpens = readsWithoutAsking(t, ["service": "cloud", "synchronizable": "yes"])
        #expect(cloudOpens)
        let plainOpens = readsWithoutAsking(t, ["service": "plain"])
        #expect(plainOpens)
        #expect(try t.store.synchronizableVersions().count == 1)
    }

    /// An item stored synchronizable with an access control before the refusal existed:
    /// its received copy asks too, and a later record without one leaves it asking.
    @Test func aReceivedRecordNeverRemovesAnAccessControl() throws {
        let a = try TestDevice(), b = try TestDevice()
        #expect(a.add(["service": "s", "synchronizable": "yes"], data: "one").status == 0)
        let identity = try #require(try a.store.synchronizableVersions().first?.identity)
        let plain = try #require(try a.store.synchronizedItem(identity: identity))
        var protected = plain
        protected.attributes["accessControl"] = Self.presence
        try b.store.applySynchronized(protected)
        let copyOpens = readsWithoutAsking(b, ["service": "s", "synchronizable": "yes"])
        #expect(!copyOpens)

        var later = plain
        later.attributes["modified"] = String(plain.modified + 10)
        try b.store.applySynchronized(later)
        let laterCopyOpens = readsWithoutAsking(b, ["service": "s", "synchronizable": "yes"])
        #expect(!laterCopyOpens)
        let attributes = b.find(["service": "s", "synchronizable": "yes"], returning: "attributes").items.first?.attributes
        #expect(attributes?["accessControl"] == Self.presence)
        let laterModified = plain.modified + 10
        #expect(try b.store.synchronizableVersions().first?.modified == laterModified)

        // Such an item takes other changes, and can stop syncing; it cannot be re-made.
        try b.store.user.respond(.passcode, times: 2, passcode: TestDevice.secret(TestDevice.passcode))
        #expect(b.update(["service": "s", "synchronizable": "yes"], to: ["label": "kept"]).status == 0)
        #expect(b.update(["service": "s", "synchronizable": "yes"], to: ["synchronizable": "no"]).status == 0)
        let localCopyOpens = readsWithoutAsking(b, ["service": "s"])
        #expect(!localCopyOpens)
    }

    @Test func aReceivedBiometryCurrentSetCopyIsBoundToNoEnrollment() throws {
        let a = try TestDevice(), b = try TestDevice()
        try b.store.user.enroll(type: .faceID)
        #expect(a.add(["service": "s", "synchronizable": "yes"]).status == 0)
        let identity = try #require(try a.store.synchronizableVersions().first?.identity)
        var item = try #require(try a.store.synchronizedItem(identity: identity))
        item.attributes["accessControl"] = Self.currentSet
        try b.store.applySynchronized(item)
        try b.store.user.respond(.match, times: 1, passcode: nil)
        var request = KeychainRequest(operation: .find, attributes: ["service": "s", "synchronizable": "yes"], returning: "data")
        request.authentication = KeychainAuthentication(interaction: .allow)
        let status = b.store.perform(request).status
        #expect(status != 0)
    }

    @Test func anUnreadableReceivedAccessControlIsRefused() throws {
        let a = try TestDevice(), b = try TestDevice()
        #expect(a.add(["service": "s", "synchronizable": "yes"]).status == 0)
        let identity = try #require(try a.store.synchronizableVersions().first?.identity)
        var item = try #require(try a.store.synchronizedItem(identity: identity))
        item.attributes["accessControl"] = "userPresence"
        #expect(throws: SecError.self) { try b.store.applySynchronized(item) }
        #expect(b.find(["service": "s", "synchronizable": "any"]).status == SecStatus.itemNotFound)
    }
}
