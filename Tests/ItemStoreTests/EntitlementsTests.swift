// Parsing of Apple entitlements plists.
import DPFSProtocol
import DataProtection
import Foundation
import Testing
@testable import ItemStore

@Suite struct EntitlementsTests {
    @Test func readsWhatCodesignPrints() throws {
        let plist = entitlementsPlist(appID: "ABCDE12345.com.example.mail",
                                      groups: ["ABCDE12345.com.example.shared", "ABCDE12345.*"],
                                      appGroups: ["group.com.example"], protection: "NSFileProtectionComplete")
        let app = try Entitlements(plist: Data(plist.utf8))
        #expect(app.teamID == "ABCDE12345" && app.bundleID == "com.example.mail")
        // Apple's order: keychain-access-groups, application identifier, app groups.
        #expect(app.accessGroups == ["ABCDE12345.com.example.shared", "ABCDE12345.*",
                                     "ABCDE12345.com.example.mail", "group.com.example"])
        #expect(app.defaultDataProtection == .complete)
        let scope = AccessScope(app)
        #expect(scope.defaultGroup == "ABCDE12345.com.example.shared")
        #expect(scope.allows("ABCDE12345.anything") && scope.allows("group.com.example"))
        #expect(!scope.allows("ZZZZZ99999.com.example.shared") && !scope.allows("group.other"))
    }

    @Test func listsTheApplicationIdentifierOnce() throws {
        let plist = entitlementsPlist(appID: "ABCDE12345.com.example.vault",
                                      groups: ["ABCDE12345.com.example.vault", "ABCDE12345.shared"])
        let app = try Entitlements(plist: Data(plist.utf8))
        #expect(app.accessGroups == ["ABCDE12345.com.example.vault", "ABCDE12345.shared"],
                "keychain-access-groups keeps its order; the application identifier is not added again")
        #expect(AccessScope(app).defaultGroup == "ABCDE12345.com.example.vault")
    }

    @Test func expandsXcodeBuildSettings() throws {
        let plist = entitlementsPlist(appID: "ABCDE12345.com.example.mail", groups: ["$(AppIdentifierPrefix)com.example.shared"])
        #expect(try Entitlements(plist: Data(plist.utf8)).accessGroups.first == "ABCDE12345.com.example.shared")
    }

    @Test func refusesWhatIsNotAnAppIdentity() {
        let bad = [
            "not a plist",
            entitlementsPlist(appID: "nodot", groups: []),
            entitlementsPlist(appID: "ABCDE12345.com.x", groups: ["OTHER12345.group"]),
            entitlementsPlist(appID: "ABCDE12345.com.x", groups: [], protection: "NSFileProtectionSometimes"),
            entitlementsPlist(appID: "ABCDE12345.com.x", groups: [], appGroups: ["com.x"]),
            entitlementsPlist(appID: "ABCDE12345.com.x", groups: [], appGroups: ["group.*"]),
            entitlementsPlist(appID: "ABCDE12345.com.x", groups: [], appGroups: ["group.com.bank.*"]),
        ]
        for text in bad {
            #expect(throws: EntitlementsError.self) { try Entitlements(plist: Data(text.utf8)) }
        }
        let plist = entitlementsPlist(appID: "ABCDE12345.com.x", groups: [])
        #expect(throws: EntitlementsError.self) { try Entitlements(plist: Data(plist.utf8), bundleID: "com.y") }
    }

    @Test func anApplicationGroupBelongsToTheTeamThatRegisteredItFirst() throws {
        let t = try TestDevice()
        let bank = try t.registerApp(entitlementsPlist(appID: "AAAAAAAAAA.com.bank.app", groups: [],
                                                       appGroups: ["group.com.bank.shared"]))
        #expect(t.add(["service": "bank", "accessGroup": "group.com.bank.shared"], data: "BANK-TOKEN", app: bank).status == 0)
        let intruder = entitlementsPlist(appID: "DDDDDDDDDD.com.evil.d", groups: [], appGroups: ["group.com.bank.shared"])
        #expect(throws: EntitlementsError.self) { _ = try t.registerApp(intruder) }
        #expect(t.find(["service": "bank", "accessGroup": "group.com.bank.shared"], app: "com.evil.d").status
                    == SecStatus.missingEntitlement)
        // The same team's other app shares it, as on iOS.
        let widget = try t.registerApp(entitlementsPlist(appID: "AAAAAAAAAA.com.bank.widget", groups: [],
                                                         appGroups: ["group.com.bank.shared"]))
        #expect(t.secret(["service": "bank", "accessGroup": "group.com.bank.shared"], app: widget) == "BANK-TOKEN")
    }
}
