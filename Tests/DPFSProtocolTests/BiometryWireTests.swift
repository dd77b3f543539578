// The biometry messages and a keychain call's authentication options cross the wire
// unchanged; the access-control flags parse by name and number.
import DPFSProtocol
import Foundation
import Testing

@Suite struct BiometryWireTests {
    func roundTrip<T: Codable>(_ value: T) throws -> T {
        try ControlCoding.decode(T.self, ControlCoding.encode(value))
    }

    @Test func everyBiometryRequestKeepsItsCase() throws {
        let token = String(repeating: "a1", count: 16)
        let requests: [BiometryRequest] = [
            .state, .enroll(type: .touchID), .enroll(type: nil), .unenroll, .reenroll(type: .faceID),
            .respond(answer: .nomatch, times: 5), .respond(answer: .passcode, times: 1), .clearAnswers,
            .evaluate(policy: .deviceOwner, context: token, reason: "Sign in ✓", reuse: 30, interactive: false),
            .invalidate(context: token),
        ]
        for request in requests {
            #expect(String(describing: try roundTrip(ControlRequest.biometry(request)))
                    == String(describing: ControlRequest.biometry(request)))
        }
    }

    @Test func theReplyCarriesTheState() throws {
        var reply = ControlReply(ok: true)
        reply.biometry = BiometryReply(enrolled: true, type: .faceID, domainState: "00ff", lockedOut: true,
                                       lockout: .failedMatches, failedMatches: 5, queued: 2, passcodeSet: true,
                                       errorCode: LocalAuthenticationCode.biometryLockout, promptTimeout: 5)
        let back = try roundTrip(reply).biometry
        #expect(back?.domainState == "00ff" && back?.lockedOut == true && back?.failedMatches == 5)
        #expect(back?.lockout == .failedMatches)
        #expect(back?.errorCode == -8 && back?.queued == 2 && back?.type == .faceID)
    }

    @Test func aKeychainCallKeepsItsAuthentication() throws {
        var request = KeychainRequest(operation: .find, attributes: ["class": "genp", "accessControl": "8"])
        request.authentication = KeychainAuthentication(interaction: .skip, prompt: "Pay", context: String(repeating: "0", count: 32))
        guard case .keychain(let back) = try roundTrip(ControlRequest.keychain(request)) else {
            Issue.record("not a keychain request")
            return
        }
        #expect(back.authentication == request.authentication)
        #expect(back.attributes["accessControl"] == "8")
        #expect(try roundTrip(KeychainRequest(operation: .find)).authentication == nil)
    }

    @Test func flagsParseByNameAndNumber() {
        #expect(AccessControlFlags(names: "biometryCurrentSet") == .biometryCurrentSet)
        #expect(AccessControlFlags(names: "userPresence,AND,devicePasscode") == [.userPresence, .and, .devicePasscode])
        #expect(AccessControlFlags(names: "16400")?.rawValue == 16400)
        #expect(AccessControlFlags(names: "face") == nil)
        #expect(AccessControlFlags(names: "") == nil)
        #expect(AccessControlFlags([.or, .and]).problem != nil)
        #expect(AccessControlFlags(rawValue: 1 << 6).problem != nil)
        #expect(AccessControlFlags([.biometryAny, .or, .devicePasscode, .privateKeyUsage]).problem == nil)
        #expect(KeychainAuthentication.isValidToken(String(repeating: "f", count: 32)))
        #expect(!KeychainAuthentication.isValidToken(String(repeating: "F", count: 32)))
        #expect(!KeychainAuthentication.isValidToken("abc"))
    }
}
