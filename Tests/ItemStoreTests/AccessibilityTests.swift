// The seven accessibility values follow the lock state of their file class.
import DPFSProtocol
import DataProtection
import Foundation
import GRDB
import Testing
@testable import ItemStore

@Suite struct AccessibilityTests {
    @Test func everyValueMapsToItsFileClass() {
        #expect(Accessibility.allCases.count == 7)
        #expect(Accessibility.whenUnlocked.protectionClass == .complete)
        #expect(Accessibility.whenUnlockedThisDeviceOnly.protectionClass == .complete)
        #expect(Accessibility.whenPasscodeSetThisDeviceOnly.protectionClass == .complete)
        #expect(Accessibility.afterFirstUnlock.protectionClass == .untilFirstAuth)
        #expect(Accessibility.afterFirstUnlockThisDeviceOnly.protectionClass == .untilFirstAuth)
        #expect(Accessibility.always.protectionClass == .none)
        #expect(Accessibility.alwaysThisDeviceOnly.protectionClass == .none)
        #expect(Accessibility(name: "kSecAttrAccessibleAfterFirstUnlock") == .afterFirstUnlock)
    }

    /// One item per accessibility value, secret = its name.
    func addAll(_ t: TestDevice) {
        for accessibility in Accessibility.allCases {
            #expect(t.add(["service": accessibility.rawValue, "accessible": accessibility.rawValue],
                          data: accessibility.rawValue).status == 0)
        }
    }

    func available(_ t: TestDevice) -> [Accessibility: Int32] {
        Dictionary(uniqueKeysWithValues: Accessibility.allCases.map { ($0, t.find(["service": $0.rawValue]).status) })
    }

    @Test func lockedDeviceHidesOnlyWhenUnlockedItems() throws {
        let t = try TestDevice()
        addAll(t)
        t.lock()
        for (accessibility, status) in available(t) {
            let expected = accessibility.protectionClass == .complete ? SecStatus.interactionNotAllowed : 0
            #expect(status == expected, "\(accessibility)")
            // Attributes alone are no way around it.
            let attributes = t.find(["service": accessibility.rawValue], returning: "attributes").status
            #expect(attributes == expected, "\(accessibility)")
        }
        try t.unlock()
        #expect(available(t).values.allSatisfy { $0 == 0 })
        #expect(t.secret(["service": "WhenUnlocked"]) == "WhenUnlocked")
    }

    @Test func restartHidesEverythingButAlways() throws {
        let t = try TestDevice()
        addAll(t)
        t.restart()
        for (accessibility, status) in available(t) {
            let expected = accessibility.protectionClass == .none ? 0 : SecStatus.interactionNotAllowed
            #expect(status == expected, "\(accessibility)")
        }
        try t.unlock()
        t.lock()
        #expect(t.secret(["service": "AfterFirstUnlock"]) == "AfterFirstUnlock")
    }

    @Test func lockedAddsUpdatesAndDeletesAreRefused() throws {
        let t = try TestDevice()
        t.add(["service": "locked", "accessible": "WhenUnlocked"], data: "1")
        t.add(["service": "open", "accessible": "AfterFirstUnlock"], data: "2")
        t.lock()
        #expect(t.add(["service": "new"]).status == SecStatus.interactionNotAllowed)
        // A duplicate of a locked item: its existence is not for the caller to learn.
        #expect(t.add(["service": "locked", "accessible": "Always"]).status == SecStatus.interactionNotAllowed)
        #expect(t.add(["service": "open", "accessible": "Always"]).status == SecStatus.duplicateItem)
        #expect(t.update(["service": "locked"], to: ["label": "x"]).status == SecStatus.interactionNotAllowed)
        #expect(t.delete(["service": "locked"]).status == SecStatus.interactionNotAllowed)
        // A query that meets a locked item fails whole, and changes nothing.
        #expect(t.find([:], limit: "all").status == SecStatus.interactionNotAllowed)
        #expect(t.find([:], limit: "all", returning: "attributes").status == SecStatus.interactionNotAllowed)
        #expect(t.update([:], newData: "x").status == SecStatus.interactionNotAllowed)
        #expect(t.delete([:]).status == SecStatus.interactionNotAllowed)
        #expect(t.update(["service": "open"], to: ["accessible": "WhenUnlocked"]).status == SecStatus.interactionNotAllowed)
        #expect(t.update(["service": "open"], newData: "3").status == 0)
        try t.unlock()
        #expect(t.secret(["service": "locked"]) == "1")
        #expect(t.secret(["service": "open"]) == "3")
        #expect(t.find([:], limit: "all").items.count == 2)
    }

    @Test func changingAccessibilityReseals() throws {
        let t = try TestDevice()
        t.add(["service": "s"], data: "moving")
        #expect(t.update(["service": "s"], to: ["accessible": "Always"]).status == 0)
        t.restart()
        #expect(t.secret(["service": "s"]) == "moving")
        #expect(t.find(["service": "s", "accessible": "Always"]).status == 0)
        #expect(t.find(["service": "s", "accessible": "WhenUnlocked"]).status == SecStatus.itemNotFound)
    }

    @Test func whenPasscodeSetNeedsAPasscode() throws {
        let t = try TestDevice(passcode: false)
        let item = ["service": "p", "accessible": "WhenPasscodeSetThisDeviceOnly"]
        #expect(t.add(item).status == SecStatus.notAvailable)
        t.add(["service": "p"])
        #expect(t.update(["service": "p"], to: ["accessible": "WhenPasscodeSetThisDeviceOnly"]).status == SecStatus.notAvailable)
        // Without a passcode every class is available: the device never locks.
        t.lock()
        #expect(t.secret(["service": "p"]) == "secret")
    }

    @Test func whenPasscodeSetItemsDieWithThePasscode() throws {
        let t = try TestDevice()
        let item = ["service": "p", "accessible": "WhenPasscodeSetThisDeviceOnly"]
        #expect(t.add(item, data: "pin-bound").status == 0)
        t.add(["service": "other"])
        t.lock()
        #expect(t.find(item).status == SecStatus.interactionNotAllowed)
        try t.unlock()
        #expect(t.secret(item) == "pin-bound")
        try t.device.changePasscode(current: TestDevice.secret(TestDevice.passcode), new: nil)
        #expect(t.find(["service": "p"]).status == SecStatus.itemNotFound)
        #expect(t.secret(["service": "other"]) == "secret")
        // Gone for good, not merely hidden: a new passcode does not bring it back.
        try t.device.changePasscode(current: nil, new: TestDevice.secret("5678"))
        #expect(t.find(["service": "p"]).status == SecStatus.itemNotFound)
        #expect(t.add(item).status == 0)
    }

    /// Deleted, not only hidden by the queries' filter: the store's observer of the
    /// passcode's removal deletes the rows.
    @Test func removingThePasscodeDeletesTheRowsOfItsItemsOnly() throws {
        let t = try TestDevice()
        #expect(t.add(["service": "p", "accessible": "WhenPasscodeSetThisDeviceOnly"]).status == 0)
        #expect(t.add(["service": "q", "accessible": "WhenUnlockedThisDeviceOnly"]).status == 0)
        let rows = { (accessible: String) in
            try t.store.pool.read { try Int.fetchOne($0, sql: "SELECT count(*) FROM items WHERE accessible = ?",
                                                    arguments: [accessible]) }
        }
        #expect(try rows("WhenPasscodeSetThisDeviceOnly") == 1)
        try t.device.changePasscode(current: TestDevice.secret(TestDevice.passcode), new: nil)
        #expect(try rows("WhenPasscodeSetThisDeviceOnly") == 0)
        #expect(try rows("WhenUnlockedThisDeviceOnly") == 1)
        #expect(t.secret(["service": "q"]) == "secret")
    }
}
