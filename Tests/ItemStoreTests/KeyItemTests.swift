// Key items and Secure Enclave keys at the item store: what generate makes, what a
// token lets through (its class key, its access group, its integrity), and that key
// items live beside passwords under the same identity rules.
import Crypto
import DPFSProtocol
import DataProtection
import Foundation
import SecKeyCrypto
import Testing
@testable import ItemStore

@Suite struct KeyItemTests {
    func generate(_ t: TestDevice, _ attributes: [String: String], permanent: Bool = true) -> KeyResponse {
        t.store.performKey(KeyRequest(operation: .generate, attributes: attributes, permanent: permanent))
    }

    func sign(_ t: TestDevice, _ token: Data?, app: String? = nil) -> KeyResponse {
        t.store.performKey(KeyRequest(operation: .sign, app: app, token: token,
                                      algorithm: KeyAlgorithm.ecdsaSignatureMessageX962SHA256.rawValue,
                                      input: Data("message".utf8)))
    }

    @Test func secureEnclaveKeySignsWithItsTokenAndFoundTokenAlike() throws {
        let t = try TestDevice()
        let made = generate(t, ["applicationTag": "01", "tokenID": "secureEnclave", "accessible": "WhenUnlocked"])
        #expect(made.status == 0)
        let publicKey = try #require(made.publicKey)
        let signed = sign(t, made.token)
        #expect(signed.status == 0)
        let signature = try P256.Signing.ECDSASignature(derRepresentation: try #require(signed.output))
        #expect(try P256.Signing.PublicKey(x963Representation: publicKey).isValidSignature(signature, for: Data("message".utf8)))

        let found = t.find(["class": "keys", "applicationTag": "01"], returning: "both")
        #expect(found.status == 0)
        let item = try #require(found.items.first)
        #expect(item.attributes?["tokenID"] == "secureEnclave" && item.attributes?["publicKey"] == publicKey.hexString)
        #expect(item.attributes?["applicationLabel"] == KeyEncoding.applicationLabel(ofPublicKey: publicKey).hexString)
        #expect(sign(t, item.data).status == 0, "the token a find returns signs too")
    }

    @Test func tokensObeyTheLockTheirGroupAndTheirSeal() throws {
        let t = try TestDevice()
        let locked = try #require(generate(t, ["tokenID": "secureEnclave", "accessible": "WhenUnlocked"],
                                           permanent: false).token)
        let afterFirst = try #require(generate(t, ["tokenID": "secureEnclave", "accessible": "AfterFirstUnlock"],
                                               permanent: false).token)
        t.lock()
        #expect(sign(t, locked).status == SecStatus.interactionNotAllowed)
        #expect(sign(t, afterFirst).status == 0)
        t.restart()
        #expect(sign(t, afterFirst).status == SecStatus.interactionNotAllowed)
        try t.unlock()
        #expect(sign(t, locked).status == 0)

        var altered = locked
        altered[altered.count - 1] ^= 1
        #expect(sign(t, altered).status == SecStatus.decode)
        #expect(sign(t, Data("not a token".utf8)).status == SecStatus.param)
        _ = try t.registerApp(Self.otherApp)
        #expect(sign(t, locked, app: "com.example.other").status == SecStatus.missingEntitlement)
    }

    @Test func aWhenPasscodeSetKeyDiesWithThePasscode() throws {
        let t = try TestDevice()
        let attributes = ["tokenID": "secureEnclave", "accessible": "WhenPasscodeSetThisDeviceOnly"]
        let held = try #require(generate(t, attributes, permanent: false).token)
        let stored = try #require(generate(t, attributes.merging(["applicationTag": "02"]) { $1 }).token)
        #expect(sign(t, held).status == 0)
        try t.device.changePasscode(current: TestDevice.secret(TestDevice.passcode), new: nil)
        #expect(sign(t, held).status == SecStatus.itemNotFound, "a ref held across the removal")
        #expect(sign(t, stored).status == SecStatus.itemNotFound)
        #expect(generate(t, attributes, permanent: false).status == SecStatus.notAvailable)
        #expect(generate(t, attributes).status == SecStatus.notAvailable)

        // Gone for good: a new passcode does not bring the key back; a change keeps it.
        try t.device.changePasscode(current: nil, new: TestDevice.secret("5678"))
        #expect(sign(t, held).status == SecStatus.itemNotFound)
        let fresh = try #require(generate(t, attributes, permanent: false).token)
        try t.device.changePasscode(current: TestDevice.secret("5678"), new: TestDevice.secret("9012"))
        #expect(sign(t, fresh).status == 0)
    }

    @Test func aWhenPasscodeSetKeyNeedsAPasscode() throws {
        let t = try TestDevice(passcode: false)
        let attributes = ["tokenID": "secureEnclave", "accessible": "WhenPasscodeSetThisDeviceOnly"]
        #expect(generate(t, attributes, permanent: false).status == SecStatus.notAvailable)
        #expect(generate(t, attributes).status == SecStatus.notAvailable)
        #expect(generate(t, ["tokenID": "secureEnclave"], permanent: false).status == 0)
    }

    @Test func refusedRequests() throws {
        let t = try TestDevice()
        #expect(generate(t, ["tokenID": "com.example.token"]).status == SecStatus.param)
        #expect(generate(t, ["keyType": "rsa"]).status == SecStatus.param)
        #expect(generate(t, ["tokenID": "secureEnclave", "synchronizable": "yes"]).status == SecStatus.param)
        #expect(t.add(["class": "keys", "tokenID": "secureEnclave"], data: "forged").status == SecStatus.param)
        #expect(sign(t, nil).status == SecStatus.param)
        let token = generate(t, ["tokenID": "secureEnclave"], permanent: false).token
        let decrypt = t.store.performKey(KeyRequest(operation: .decrypt, token: token,
                                                    algorithm: KeyAlgorithm.ecdsaSignatureMessageX962SHA256.rawValue,
                                                    input: Data([1])))
        #expect(decrypt.status == SecStatus.param, "a signature algorithm does not decrypt")
    }

    @Test func keysAndPasswordsLiveSideBySide() throws {
        let t = try TestDevice()
        #expect(t.add(["service": "01"]).status == 0)
        #expect(t.addOrdinaryKey(["applicationTag": "01"]).status == 0)
        #expect(t.addOrdinaryKey(["applicationTag": "01"]).status == 0, "two keys may share a tag, as on iOS")
        #expect(t.find(["class": "keys", "applicationTag": "01"], limit: "all").items.count == 2)
        #expect(t.find(["service": "01"], limit: "all").items.count == 1)
        #expect(t.find(["class": "keys", "service": "01"]).status == SecStatus.param)
        let ordinary = t.find(["class": "keys", "applicationTag": "01"], returning: "data")
        #expect(ordinary.items.first?.data?.count == KeyEncoding.privateKeySize, "an ordinary key's data is its X9.63 form")
        #expect(t.delete(["class": "keys"]).status == 0)
        #expect(t.find(["service": "01"]).status == 0)
    }

    static let otherApp = """
        <?xml version="1.0" encoding="UTF-8"?>
        <plist version="1.0"><dict>
        <key>application-identifier</key><string>TEAM2.com.example.other</string>
        <key>keychain-access-groups</key><array><string>TEAM2.com.example.other</string></array>
        </dict></plist>
        """
}
