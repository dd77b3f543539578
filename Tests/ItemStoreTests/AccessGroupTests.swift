// Apps and keychain access groups: entitlements decide where items go and who sees them.
import DPFSProtocol
import DataProtection
import Foundation
import Testing
@testable import ItemStore

@Suite struct AccessGroupTests {
    static let team = "ABCDE12345"
    let mailPlist = entitlementsPlist(appID: "\(team).com.example.mail",
                                      groups: ["\(team).com.example.mail", "\(team).com.example.shared"])
    let notesPlist = entitlementsPlist(appID: "\(team).com.example.notes",
                                       groups: ["\(team).com.example.notes", "\(team).com.example.shared"])

    @Test func sandboxAppWithoutPlistOwnsItsBundleGroup() throws {
        let t = try TestDevice(sandboxApp: "org.demo.app")
        let attributes = t.add(["service": "s"], returning: "attributes").items.first?.attributes
        #expect(attributes?["accessGroup"] == "XXXXXXXXXX.org.demo.app")
        #expect(try t.store.entitlements(of: nil).bundleID == "org.demo.app")
    }

    @Test func newItemsGoIntoTheFirstGroup() throws {
        let t = try TestDevice(sandboxApp: "com.example.mail", entitlements: mailPlist)
        let attributes = t.add(["service": "s"], returning: "attributes").items.first?.attributes
        #expect(attributes?["accessGroup"] == "\(Self.team).com.example.mail")
        #expect(t.add(["service": "s", "accessGroup": "\(Self.team).com.example.shared"]).status == 0)
        #expect(t.find(["service": "s"], limit: "all").items.count == 2)
    }

    @Test func unentitledGroupsAreMissingEntitlement() throws {
        let t = try TestDevice(sandboxApp: "com.example.mail", entitlements: mailPlist)
        let foreign = "\(Self.team).com.example.secret"
        #expect(t.add(["service": "s", "accessGroup": foreign]).status == SecStatus.missingEntitlement)
        #expect(t.find(["accessGroup": foreign]).status == SecStatus.missingEntitlement)
        #expect(t.delete(["accessGroup": foreign]).status == SecStatus.missingEntitlement)
        t.add(["service": "s"])
        #expect(t.update(["service": "s"], to: ["accessGroup": foreign]).status == SecStatus.missingEntitlement)
    }

    @Test func twoAppsOfOneTeamShareThroughACommonGroup() throws {
        let t = try TestDevice(sandboxApp: "com.example.mail", entitlements: mailPlist)
        #expect(try t.registerApp(notesPlist) == "com.example.notes")
        let shared = "\(Self.team).com.example.shared"
        t.add(["service": "private"], data: "mail only")
        t.add(["service": "token", "accessGroup": shared], data: "for both")
        let notes = "com.example.notes"
        #expect(t.secret(["service": "token"], app: notes) == "for both")
        #expect(t.find(["service": "private"], app: notes).status == SecStatus.itemNotFound)
        #expect(t.find([:], app: notes, limit: "all").items.count == 1)
        #expect(t.delete(["service": "private"], app: notes).status == SecStatus.itemNotFound)
        // Notes' own items go into its first group, out of Mail's sight.
        t.add(["service": "note"], app: notes)
        #expect(t.find(["service": "note"]).status == SecStatus.itemNotFound)
        #expect(t.update(["service": "token"], newData: "changed", app: notes).status == 0)
        #expect(t.secret(["service": "token"]) == "changed")
    }

    @Test func appsOfAnotherTeamSeeNothing() throws {
        let t = try TestDevice(sandboxApp: "com.example.mail", entitlements: mailPlist)
        _ = try t.registerApp(entitlementsPlist(appID: "ZZZZZ99999.com.evil.app", groups: ["ZZZZZ99999.*"]))
        t.add(["service": "s"])
        #expect(t.find([:], app: "com.evil.app", limit: "all").status == SecStatus.itemNotFound)
        #expect(throws: EntitlementsError.self) {
            try t.registerApp(entitlementsPlist(appID: "ZZZZZ99999.com.evil.app", groups: ["\(Self.team).com.example.shared"]))
        }
    }

    @Test func wildcardGroupsAdmitTheWholeTeam() throws {
        let t = try TestDevice(sandboxApp: "com.example.mail", entitlements: mailPlist)
        _ = try t.registerApp(entitlementsPlist(appID: "\(Self.team).com.example.admin", groups: ["\(Self.team).*"]))
        t.add(["service": "a"])
        t.add(["service": "b", "accessGroup": "\(Self.team).com.example.shared"])
        let admin = "com.example.admin"
        #expect(t.find([:], app: admin, limit: "all").items.count == 2)
        // A wildcard names no group, so the admin's own items go under its app ID.
        let attributes = t.add(["service": "c"], app: admin, returning: "attributes").items.first?.attributes
        #expect(attributes?["accessGroup"] == "\(Self.team).com.example.admin")
        #expect(t.add(["service": "d", "accessGroup": "\(Self.team).anything"], app: admin).status == 0)
        #expect(t.add(["service": "e", "accessGroup": "OTHER12345.x"], app: admin).status == SecStatus.missingEntitlement)
        // The pattern itself is no group an item can be stored under.
        #expect(t.add(["service": "f", "accessGroup": "\(Self.team).*"], app: admin).status == SecStatus.missingEntitlement)
        #expect(t.add(["service": "g", "accessGroup": "\(Self.team).com.*"], app: admin).status == SecStatus.missingEntitlement)
    }

    @Test func unknownAppsHaveNoEntitlement() throws {
        let t = try TestDevice()
        #expect(t.find([:], app: "com.nobody").status == SecStatus.missingEntitlement)
        #expect(t.add(["service": "s"], app: "com.nobody").status == SecStatus.missingEntitlement)
        // An empty bundle ID is nobody, not the sandbox's app.
        #expect(t.find([:], app: "").status == SecStatus.missingEntitlement)
    }

    @Test func reRegisteringReplacesTheEntitlements() throws {
        let t = try TestDevice()
        _ = try t.registerApp(notesPlist)
        _ = try t.registerApp(entitlementsPlist(appID: "\(Self.team).com.example.notes", groups: []))
        let groups = try t.store.entitlements(of: "com.example.notes").accessGroups
        #expect(groups == ["\(Self.team).com.example.notes"])
        #expect(try t.store.entitlements(of: nil).bundleID == "com.example.app")
    }

    @Test func theListNamesEveryAppTheSandboxsOwnFirst() throws {
        let t = try TestDevice(sandboxApp: "org.demo.app")
        _ = try t.registerApp(entitlementsPlist(appID: "\(Self.team).com.example.notes",
                                                groups: ["\(Self.team).com.example.shared"],
                                                protection: "NSFileProtectionComplete"))
        _ = try t.registerApp(mailPlist)
        let apps = try t.store.listedApps()
        #expect(apps.map(\.bundleID) == ["org.demo.app", "com.example.mail", "com.example.notes"])
        #expect(apps.map(\.own) == [true, false, false])
        // Registered without a plist: its team is a placeholder no signature states.
        #expect(apps[0].accessGroups == ["XXXXXXXXXX.org.demo.app"])
        #expect(apps[0].teamID == nil && apps[0].applicationIdentifier == nil && apps[0].defaultDataProtection == nil)
        #expect(apps[2].accessGroups == ["\(Self.team).com.example.shared", "\(Self.team).com.example.notes"])
        #expect(apps[2].teamID == Self.team && apps[2].applicationIdentifier == "\(Self.team).com.example.notes")
        #expect(apps[2].defaultDataProtection == "complete")
        #expect(try t.store.listedApps(only: "com.example.mail").map(\.bundleID) == ["com.example.mail"])
        #expect(try t.store.listedApps(only: "org.demo.app").map(\.own) == [true])
        #expect(try t.store.listedApps(only: "com.nobody").isEmpty)
    }

    @Test func aDamagedRegistrationFailsTheList() throws {
        let t = try TestDevice()
        _ = try t.registerApp(mailPlist)
        try t.tamper("UPDATE apps SET accessGroups = 'not json' WHERE bundleID = 'com.example.mail'")
        #expect(throws: EntitlementsError.self) { try t.store.listedApps() }
        #expect(try t.store.listedApps(only: "com.example.app").count == 1)
    }
}
