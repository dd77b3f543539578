// Secure Enclave keys behind a SecAccessControl at the item store: each use asks the
// simulated user through the same path as an item's data read, finding the key asks
// nothing, .privateKeyUsage alone asks nothing, re-enrollment invalidates a
// .biometryCurrentSet key, and the flags are sealed into the token and the item.
import DPFSProtocol
import DataProtection
import Foundation
import SecKeyCrypto
import Testing
@testable import ItemStore

@Suite struct KeyAccessControlTests {
    static let usage = AccessControlFlags.privateKeyUsage.rawValue
    static let currentSet = String(usage | AccessControlFlags.biometryCurrentSet.rawValue)

    func device() throws -> TestDevice {
        let t = try TestDevice()
        try t.store.user.enroll(type: .faceID)
        return t
    }

    func generate(_ t: TestDevice, tag: String, _ flags: String) -> KeyResponse {
        t.store.performKey(KeyRequest(operation: .generate, attributes: ["applicationTag": tag, "tokenID": "secureEnclave",
                                                                         "accessControl": flags], permanent: true))
    }

    func sign(_ t: TestDevice, _ token: Data?, _ interaction: KeychainAuthentication.Interaction = .allow) -> Int32 {
        t.store.performKey(KeyRequest(operation: .sign, token: token,
                                      algorithm: KeyAlgorithm.ecdsaSignatureMessageX962SHA256.rawValue,
                                      input: Data("message".utf8),
                                      authentication: KeychainAuthentication(interaction: interaction))).status
    }

    func answer(_ t: TestDevice, _ answer: BiometryAnswer, times: Int = 1) throws {
        try t.store.user.respond(answer, times: times, passcode: nil)
    }

    @Test func theGateTellsAnEnclaveKeyAsTheRecordDoes() throws {
        let t = try device()
        _ = try #require(generate(t, tag: "01", Self.currentSet).token)
        let query = try ItemQuery(ParsedAttributes(["class": "keys"]), scope: AccessScope(try t.store.entitlements(of: nil)),
                                  passcodeSet: true, keys: t.store.keys)
        let items = try t.store.selecting { try query.fetch($0, withSecret: false, limitOne: false, keys: t.store.keys) }
        #expect(!items.isEmpty)
        for item in items {
            let gate = try ItemRecord.gate(opening: item, keys: t.store.keys)
            let whole = AccessGate(try ItemRecord(opening: item, keys: t.store.keys))
            #expect(gate.isEnclaveKey == whole.isEnclaveKey)
            #expect(gate.accessControl == whole.accessControl)
        }
        #expect(try items.contains { try ItemRecord.gate(opening: $0, keys: t.store.keys).isEnclaveKey })
    }

    @Test func eachUseAsksAndFindingAsksNothing() throws {
        let t = try device()
        let token = try #require(generate(t, tag: "01", Self.currentSet).token)
        try answer(t, .match)
        #expect(sign(t, token) == 0)
        try answer(t, .nomatch)
        #expect(sign(t, token) == SecStatus.authFailed)
        try answer(t, .cancel)
        #expect(sign(t, token) == SecStatus.userCanceled)
        #expect(sign(t, token, .fail) == SecStatus.interactionNotAllowed)
        #expect(sign(t, token, .skip) == SecStatus.interactionNotAllowed)

        try answer(t, .cancel)
        let found = t.find(["class": "keys", "applicationTag": "01"], returning: "both")
        #expect(found.status == 0, "a find of the key asks nothing")
        #expect(found.items.first?.attributes?["accessControl"] == Self.currentSet)
        #expect(t.store.user.state().queued == 1)
        #expect(sign(t, found.items.first?.data) == SecStatus.userCanceled, "the found token asks as well")

        let plain = try #require(generate(t, tag: "02", String(Self.usage)).token)
        try answer(t, .cancel)
        #expect(sign(t, plain) == 0, ".privateKeyUsage alone asks nothing")
        #expect(t.store.user.state().queued == 1)
    }

    @Test func reenrollmentInvalidatesTheKeyWithoutAsking() throws {
        let t = try device()
        let token = try #require(generate(t, tag: "01", Self.currentSet).token)
        try t.store.user.reenroll(type: nil)
        try answer(t, .match)
        #expect(sign(t, token) == SecStatus.authFailed)
        #expect(t.store.user.state().queued == 1, "an invalid key takes no answer")
        #expect(t.find(["class": "keys", "applicationTag": "01"], returning: "both").status == 0, "still found")
        try t.store.user.unenroll()
        #expect(generate(t, tag: "03", Self.currentSet).status == SecStatus.authFailed, "no set to bind to")
    }

    @Test func aContextsMatchSignsNoMoreAfterAReenrollment() throws {
        let t = try device()
        let token = try #require(generate(t, tag: "01", Self.currentSet).token)
        let context = String(repeating: "c4", count: 16)
        try answer(t, .match)
        #expect(t.store.user.evaluate(.biometrics, context: context, reuse: 0, interactive: true) == .granted)
        let withContext = KeychainAuthentication(interaction: .fail, context: context)
        let request = KeyRequest(operation: .sign, token: token,
                                 algorithm: KeyAlgorithm.ecdsaSignatureMessageX962SHA256.rawValue,
                                 input: Data("message".utf8), authentication: withContext)
        #expect(t.store.performKey(request).status == 0)
        try t.store.user.reenroll(type: nil)
        #expect(t.store.performKey(request).status == SecStatus.authFailed)
    }

    @Test func flagsAreSealedWithTheKey() throws {
        let t = try device()
        let token = try #require(generate(t, tag: "01", Self.currentSet).token)
        var fields = try #require(token.withUnsafeBytes(FieldEncoding.fields))
        #expect(fields.count == 7 && fields[3] == Array(Self.currentSet.utf8))
        fields[3] = Array(String(Self.usage).utf8)
        #expect(sign(t, Data(FieldEncoding.lengthPrefixed(fields))) == SecStatus.decode)
        fields[3] = []
        fields[4] = []
        #expect(sign(t, Data(FieldEncoding.lengthPrefixed(fields))) == SecStatus.decode)
        #expect(t.store.user.state().queued == 0)

        let query = ["class": "keys", "applicationTag": "01"]
        #expect(t.update(query, to: ["accessControl": String(Self.usage)]).status == SecStatus.param)
        #expect(t.update(query, to: ["accessible": "Always"]).status == SecStatus.param)
        #expect(t.update(query, to: ["label": "renamed"]).status == 0)
        let unguarded = try #require(t.store.performKey(KeyRequest(operation: .generate, attributes: [
            "applicationTag": "02", "tokenID": "secureEnclave"], permanent: true)).token)
        #expect(t.update(["class": "keys", "applicationTag": "02"], to: ["accessControl": Self.currentSet]).status
                == SecStatus.param, "nor can one be added to a key made without")
        #expect(sign(t, unguarded) == 0)
        try answer(t, .match)
        #expect(sign(t, t.find(query, returning: "data").items.first?.data) == 0)
    }
}
