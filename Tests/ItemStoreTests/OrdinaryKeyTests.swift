// Ordinary keys are the app's: the daemon refuses to make one (its private key would
// sit in the daemon's heap, and travel back in the reply), and the add that stores one
// refuses what making a permanent one refused.
import DPFSProtocol
import DataProtection
import Foundation
import Testing
@testable import ItemStore

@Suite struct OrdinaryKeyTests {
    @Test func theDaemonMakesNoOrdinaryKey() throws {
        let t = try TestDevice()
        for permanent in [true, false] {
            let made = t.store.performKey(KeyRequest(operation: .generate,
                                                     attributes: ["applicationTag": "01", "accessible": "WhenUnlocked"],
                                                     permanent: permanent))
            #expect(made.status == SecStatus.param)
            #expect(made.message?.contains("made by the app") == true)
            #expect(made.publicKey == nil && made.token == nil && made.attributes == nil)
            let encoded = try JSONSerialization.jsonObject(with: JSONEncoder().encode(made)) as? [String: Any]
            #expect(Set(try #require(encoded).keys).isSubset(of: ["status", "message"]), "no private form in the reply")
        }
        #expect(t.find(["class": "keys"]).status == SecStatus.itemNotFound, "nothing stored")
    }

    @Test func anAddedKeyIsRefusedAsAMadeOneWas() throws {
        let t = try TestDevice()
        let userPresence = String(AccessControlFlags.userPresence.rawValue)
        let currentSet = String(AccessControlFlags.privateKeyUsage.rawValue | AccessControlFlags.biometryCurrentSet.rawValue)
        #expect(t.addOrdinaryKey(["accessGroup": "TEAM9.com.example.foreign"]).status == SecStatus.missingEntitlement)
        #expect(t.addOrdinaryKey(["synchronizable": "yes", "accessControl": userPresence]).status == SecStatus.param)
        #expect(t.addOrdinaryKey(["accessControl": currentSet]).status == SecStatus.authFailed, "nothing enrolled")
        t.lock()
        #expect(t.addOrdinaryKey(["accessible": "WhenUnlocked"]).status == SecStatus.interactionNotAllowed)
        #expect(t.addOrdinaryKey(["accessible": "AfterFirstUnlock"]).status == SecStatus.success)
        try t.unlock()
        #expect(t.find(["class": "keys"], limit: "all").items.count == 1, "a refused key leaves nothing behind")

        let bare = try TestDevice(passcode: false)
        #expect(bare.addOrdinaryKey(["accessible": "WhenPasscodeSetThisDeviceOnly"]).status == SecStatus.notAvailable)
        #expect(bare.addOrdinaryKey(["accessible": "AlwaysThisDeviceOnly"]).status == SecStatus.success)
    }
}
