// Root, on the owner's socket of another user's daemon, may ask what `dpfs unmount`
// asks (the status, the unmount) and nothing of the owner's device or keychain.
@testable import Control
import DPFSProtocol
import Testing

@Suite struct ControlScopeRootTests {
    @Test func rootMayAskTheStatusAndTheUnmount() {
        #expect(ControlScope.root.refusal(of: .status) == nil)
        #expect(ControlScope.root.refusal(of: .unmounting) == nil)
    }

    @Test func rootMayNotActAsTheOwner() {
        let requests: [ControlRequest] = [
            .lock(now: true), .restart, .events, .appSession(bundleID: nil, deviceControl: false),
            .keychain(KeychainRequest(operation: .find, attributes: [:])),
        ]
        for request in requests {
            #expect(ControlScope.root.refusal(of: request) == ControlScope.rootRefusal, "\(request)")
        }
    }
}
