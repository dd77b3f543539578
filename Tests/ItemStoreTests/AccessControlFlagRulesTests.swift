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
}
