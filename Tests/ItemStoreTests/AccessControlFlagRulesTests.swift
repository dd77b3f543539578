// The store (and so `dpfs keychain --access-control`) refuses the access-control
// flag combinations Apple's SecAccessControlCreateWithFlags refuses.
import DPFSProtocol
import Testing
@testable import ItemStore

@Suite struct AccessControlFlagRulesTests {
    @Test func theStoreRefusesFlagsAppleRefuses() throws {
        let t = try TestDevice()
        for flags in ["biometryAny,biometryCurrentSet", "userPresence,devicePasscode", "userPresence,biometryAny,or"] {
            #expect(t.add(["service": flags, "accessControl": flags]).status == SecStatus.param, "\(flags)")
            #expect(t.find(["service": flags]).status == SecStatus.itemNotFound)
        }
        #expect(t.add(["service": "s", "accessControl": "userPresence,privateKeyUsage"]).status == SecStatus.success)
    }

    /// An item made before these rules, in a backup, is restored with its flags, and a
    /// query names them: only a new access control is held to Apple's combinations.
    @Test func anItemMadeBeforeTheRulesIsRestoredAndFound() throws {
        let t = try TestDevice()
        let attributes = ["class": "genp", "service": "old", "account": "", "accessGroup": "XXXXXXXXXX.com.example.app",
                          "accessible": "WhenUnlocked", "synchronizable": "no", "created": "1", "modified": "2",
                          "accessControl": "userPresence,devicePasscode"]
        let restored = Array("x".utf8).withUnsafeBytes { t.store.importItem(attributes, data: $0) }.status
        #expect(restored == SecStatus.success)
        let found = t.find(["service": "old", "accessControl": "userPresence,devicePasscode"], returning: "attributes").status
        #expect(found == SecStatus.success)
        #expect(t.add(["service": "plain"]).status == SecStatus.success)
        let update = t.update(["service": "plain"], to: ["accessControl": "biometryAny,biometryCurrentSet"]).status
        #expect(update == SecStatus.param)
    }
}
