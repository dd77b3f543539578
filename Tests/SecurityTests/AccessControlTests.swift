// SecAccessControl and LocalAuthentication against a mounted device, written as
// Apple-platform code writes them; the simulated user answers through `dpfs biometry`.
import Foundation
import LocalAuthentication
import Security
import XCTest

final class AccessControlTests: MountedDeviceTestCase {
    private let token: [String: Any] = [kSecClass as String: kSecClassGenericPassword,
                                        kSecAttrService as String: "com.example.bank", kSecAttrAccount as String: "token"]

    private func respond(_ answer: String, times: Int = 1) throws {
        try device.dpfs("biometry", "respond", device.mountpoint, answer, "--times", String(times))
    }

    private func readToken(_ extra: [String: Any] = [:]) -> (OSStatus, String?) {
        var query = token
        query[kSecReturnData as String] = kCFBooleanTrue
        query.merge(extra) { $1 }
        var result: CFTypeRef?
        let status = SecItemCopyMatching(query as CFDictionary, &result)
        return (status, (result as? Data).map { String(decoding: $0, as: UTF8.self) })
    }

    private func storeToken(_ flags: SecAccessControlCreateFlags) throws -> OSStatus {
        var error: Unmanaged<CFError>?
        guard let access = SecAccessControlCreateWithFlags(kCFAllocatorDefault, kSecAttrAccessibleWhenUnlockedThisDeviceOnly,
                                                           flags, &error) else {
            throw error!.takeRetainedValue() as Error
        }
        var item = token
        item[kSecAttrAccessControl as String] = access
        item[kSecValueData as String] = Data("s3ss10n".utf8)
        return SecItemAdd(item as CFDictionary, nil)
    }

    func testApplesValues() {
        XCTAssertEqual(SecAccessControlCreateFlags.userPresence.rawValue, 1)
        XCTAssertEqual(SecAccessControlCreateFlags.biometryAny.rawValue, 2)
        XCTAssertEqual(SecAccessControlCreateFlags.biometryCurrentSet.rawValue, 8)
        XCTAssertEqual(SecAccessControlCreateFlags.devicePasscode.rawValue, 16)
        XCTAssertEqual(SecAccessControlCreateFlags.or.rawValue, 1 << 14)
        XCTAssertEqual(SecAccessControlCreateFlags.and.rawValue, 1 << 15)
        XCTAssertEqual(SecAccessControlCreateFlags.companion.rawValue, 1 << 5)
        XCTAssertEqual(SecAccessControlCreateFlags.privateKeyUsage.rawValue, 1 << 30)
        XCTAssertEqual(kSecAttrAccessControl, "accc")
        XCTAssertEqual(kSecUseAuthenticationContext, "u_AuthCtx")
        XCTAssertEqual(LAError.Code.biometryLockout.rawValue, -8)
        XCTAssertEqual(LAError.Code.biometryNotEnrolled.rawValue, -7)
        XCTAssertEqual(LAError.Code.userCancel.rawValue, -2)
        XCTAssertEqual(LAError.Code.notInteractive.rawValue, -1004)
        XCTAssertEqual(errSecUserCanceled, -128)
    }

    func testAnNSErrorOfLAErrorDomainIsAnLAError() {
        let notEnrolled = NSError(domain: LAErrorDomain, code: -7, userInfo: [NSLocalizedDescriptionKey: "none"])
        let optional: NSError? = notEnrolled
        XCTAssertEqual((optional as? LAError)?.code, .biometryNotEnrolled)
        XCTAssertEqual(((notEnrolled as Error) as? LAError)?.code, .biometryNotEnrolled)
        XCTAssertEqual(LAError(_nsError: notEnrolled).localizedDescription, "none")
        XCTAssertNil((NSError(domain: NSOSStatusErrorDomain, code: -7) as Error) as? LAError, "another domain")
        XCTAssertNil((NSError(domain: LAErrorDomain, code: -9999) as Error) as? LAError, "a code LAError lacks")
        do {
            throw NSError(domain: LAErrorDomain, code: -2)
        } catch let error as LAError {
            XCTAssertEqual(error.code, .userCancel)
        } catch {
            XCTFail("expected an LAError, got \(error)")
        }
        let bridged = LAError(.biometryLockout) as NSError
        XCTAssertEqual([bridged.domain, String(bridged.code)], [LAErrorDomain, "-8"])
    }

    func testCreateWithFlagsRefusesWhatAppleRefuses() {
        var error: Unmanaged<CFError>?
        XCTAssertNil(SecAccessControlCreateWithFlags(nil, "not a protection" as CFTypeRef, .userPresence, &error))
        let cfError = error?.takeRetainedValue()
        XCTAssertEqual(cfError.map(CFErrorGetCode), CFIndex(errSecParam))
        XCTAssertEqual(cfError.map(CFErrorGetDomain), kCFErrorDomainOSStatus)
        XCTAssertNotNil(cfError.map(CFErrorCopyDescription))
        XCTAssertNil(SecAccessControlCreateWithFlags(nil, kSecAttrAccessibleWhenUnlocked, [.biometryAny, .or, .and], nil))
        XCTAssertNotNil(SecAccessControlCreateWithFlags(nil, kSecAttrAccessibleWhenUnlocked as CFTypeRef, [.privateKeyUsage], nil))
    }

    func testABiometryItemAsksTheUser() throws {
        try device.dpfs("biometry", "enroll", device.mountpoint)
        XCTAssertEqual(try storeToken(.biometryCurrentSet), errSecSuccess)

        var attributesQuery = token
        attributesQuery[kSecReturnAttributes as String] = true
        var attributes: CFTypeRef?
        XCTAssertEqual(SecItemCopyMatching(attributesQuery as CFDictionary, &attributes), errSecSuccess)
        let access = (attributes as? [String: Any])?[kSecAttrAccessControl as String] as? SecAccessControl
        XCTAssertEqual(access?.flags, .biometryCurrentSet)
        XCTAssertEqual((attributes as? [String: Any])?[kSecAttrAccessible as String] as? String,
                       kSecAttrAccessibleWhenUnlockedThisDeviceOnly)

        try respond("match")
        XCTAssertEqual(readToken().1, "s3ss10n")
        try respond("nomatch")
        XCTAssertEqual(readToken().0, errSecAuthFailed)
        try respond("cancel")
        XCTAssertEqual(readToken().0, errSecUserCanceled)
        XCTAssertEqual(readToken([kSecUseAuthenticationUI as String: kSecUseAuthenticationUIFail]).0, errSecInteractionNotAllowed)
        XCTAssertEqual(readToken([kSecUseAuthenticationUI as String: kSecUseAuthenticationUISkip]).0, errSecItemNotFound)

        var both = token
        both[kSecAttrAccount as String] = "other"
        both[kSecAttrAccessible as String] = kSecAttrAccessibleAfterFirstUnlock
        both[kSecAttrAccessControl as String] = SecAccessControlCreateWithFlags(nil, kSecAttrAccessibleWhenUnlocked, .userPresence, nil)
        XCTAssertEqual(SecItemAdd(both as CFDictionary, nil), errSecParam, "two accessibilities")
        both[kSecAttrAccessible as String] = kSecAttrAccessibleWhenUnlocked
        XCTAssertEqual(SecItemAdd(both as CFDictionary, nil), errSecSuccess, "the same accessibility twice")
    }

    func testAnItemWithAnAccessControlIsNotSynchronizable() throws {
        // Apple's SecItem.m: "item with kSecAttrAccessControl is not synchronizable".
        let presence = SecAccessControlCreateWithFlags(nil, kSecAttrAccessibleWhenUnlocked, .userPresence, nil)
        var item = token
        item[kSecAttrAccessControl as String] = presence as Any
        item[kSecAttrSynchronizable as String] = kCFBooleanTrue
        item[kSecValueData as String] = Data("s3".utf8)
        XCTAssertEqual(SecItemAdd(item as CFDictionary, nil), errSecParam)
        var any = token
        any[kSecAttrSynchronizable as String] = kSecAttrSynchronizableAny
        XCTAssertEqual(SecItemCopyMatching(any as CFDictionary, nil), errSecItemNotFound)

        var plain = token
        plain[kSecValueData as String] = Data("s3".utf8)
        XCTAssertEqual(SecItemAdd(plain as CFDictionary, nil), errSecSuccess)
        let both: [String: Any] = [kSecAttrAccessControl as String: presence as Any,
                                   kSecAttrSynchronizable as String: kCFBooleanTrue as Any]
        XCTAssertEqual(SecItemUpdate(token as CFDictionary, both as CFDictionary), errSecParam)
        var synced = token
        synced[kSecAttrSynchronizable as String] = kCFBooleanTrue
        XCTAssertEqual(SecItemCopyMatching(synced as CFDictionary, nil), errSecItemNotFound)
    }

    func testAQueryMatchesOnItsAccessControl() throws {
        // A delete naming an access control once removed every item, with or without one.
        var plain = token
        plain[kSecAttrAccount as String] = "plain"
        plain[kSecAttrAccessible as String] = kSecAttrAccessibleWhenUnlockedThisDeviceOnly
        plain[kSecValueData as String] = Data("plain".utf8)
        XCTAssertEqual(SecItemAdd(plain as CFDictionary, nil), errSecSuccess)
        XCTAssertEqual(try storeToken(.userPresence), errSecSuccess)
        let biometry = SecAccessControlCreateWithFlags(nil, kSecAttrAccessibleWhenUnlockedThisDeviceOnly,
                                                       .biometryCurrentSet, nil)
        let presence = SecAccessControlCreateWithFlags(nil, kSecAttrAccessibleWhenUnlockedThisDeviceOnly,
                                                       .userPresence, nil)
        let byBiometry: [String: Any] = [kSecClass as String: kSecClassGenericPassword,
                                         kSecAttrAccessControl as String: biometry as Any]
        XCTAssertEqual(SecItemDelete(byBiometry as CFDictionary), errSecItemNotFound)

        var byPresence: [String: Any] = [kSecClass as String: kSecClassGenericPassword,
                                         kSecAttrAccessControl as String: presence as Any,
                                         kSecMatchLimit as String: kSecMatchLimitAll, kSecReturnAttributes as String: true]
        var found: CFTypeRef?
        XCTAssertEqual(SecItemCopyMatching(byPresence as CFDictionary, &found), errSecSuccess)
        XCTAssertEqual((found as? [[String: Any]])?.compactMap { $0[kSecAttrAccount as String] as? String }, ["token"])
        byPresence[kSecMatchLimit as String] = nil
        byPresence[kSecReturnAttributes as String] = nil
        XCTAssertEqual(SecItemDelete(byPresence as CFDictionary), errSecSuccess)

        let all: [String: Any] = [kSecClass as String: kSecClassGenericPassword, kSecMatchLimit as String: kSecMatchLimitAll,
                                  kSecReturnAttributes as String: true]
        found = nil
        XCTAssertEqual(SecItemCopyMatching(all as CFDictionary, &found), errSecSuccess)
        XCTAssertEqual((found as? [[String: Any]])?.compactMap { $0[kSecAttrAccount as String] as? String }, ["plain"])
    }

    func testLAContextAndTheKeychain() async throws {
        let before = LAContext()
        var error: NSError?
        XCTAssertFalse(before.canEvaluatePolicy(.deviceOwnerAuthenticationWithBiometrics, error: &error))
        XCTAssertEqual(error?.code, LAError.Code.biometryNotEnrolled.rawValue)
        XCTAssertEqual(error?.domain, LAErrorDomain)
        XCTAssertEqual((error as? LAError)?.code, .biometryNotEnrolled, "the NSError casts to LAError, as on iOS")
        XCTAssertTrue(before.canEvaluatePolicy(.deviceOwnerAuthentication, error: nil))

        try device.dpfs("biometry", "enroll", device.mountpoint, "--type", "touchID")
        XCTAssertEqual(try storeToken(.biometryAny), errSecSuccess)
        let context = LAContext()
        XCTAssertTrue(context.canEvaluatePolicy(.deviceOwnerAuthenticationWithBiometrics, error: nil))
        XCTAssertEqual(context.biometryType, .touchID)
        let domain = context.evaluatedPolicyDomainState
        XCTAssertNotNil(domain)

        try respond("cancel")
        do {
            _ = try await context.evaluatePolicy(.deviceOwnerAuthenticationWithBiometrics, localizedReason: "Sign in")
            XCTFail("a cancelled prompt must throw")
        } catch LAError.userCancel {
        } catch {
            XCTFail("expected LAError.userCancel, got \(error)")
        }
        try respond("match")
        let evaluated = try await context.evaluatePolicy(.deviceOwnerAuthenticationWithBiometrics, localizedReason: "Sign in")
        XCTAssertTrue(evaluated)
        // The evaluated context reads the item twice without another answer.
        for _ in 0..<2 {
            XCTAssertEqual(readToken([kSecUseAuthenticationContext as String: context,
                                      kSecUseAuthenticationUI as String: kSecUseAuthenticationUIFail]).1, "s3ss10n")
        }

        let replied = expectation(description: "reply")
        try respond("nomatch")
        LAContext().evaluatePolicy(.deviceOwnerAuthenticationWithBiometrics, localizedReason: "Sign in") { success, error in
            XCTAssertFalse(success)
            XCTAssertEqual((error as? LAError)?.code, .authenticationFailed)
            replied.fulfill()
        }
        await fulfillment(of: [replied], timeout: 30)

        try device.dpfs("biometry", "reenroll", device.mountpoint)
        let after = LAContext()
        _ = after.canEvaluatePolicy(.deviceOwnerAuthenticationWithBiometrics, error: nil)
        XCTAssertNotEqual(after.evaluatedPolicyDomainState, domain)
    }
    func testAContextEvaluatedBeforeAReenrollmentOpensNothingAfter() async throws {
        try device.dpfs("biometry", "enroll", device.mountpoint)
        XCTAssertEqual(try storeToken(.biometryCurrentSet), errSecSuccess)
        let context = LAContext()
        try respond("match")
        let evaluated = try await context.evaluatePolicy(.deviceOwnerAuthenticationWithBiometrics, localizedReason: "Sign in")
        XCTAssertTrue(evaluated)
        XCTAssertEqual(readToken([kSecUseAuthenticationContext as String: context]).1, "s3ss10n")
        try device.dpfs("biometry", "reenroll", device.mountpoint)
        XCTAssertEqual(readToken().0, errSecItemNotFound)
        XCTAssertEqual(readToken([kSecUseAuthenticationContext as String: context]).0, errSecItemNotFound,
                       "the context's match was of the old enrollment")
    }

    func testAContextThatForbidsInteractionFailsAtOnce() async throws {
        try device.dpfs("biometry", "enroll", device.mountpoint)
        XCTAssertEqual(try storeToken(.biometryCurrentSet), errSecSuccess)
        let context = LAContext()
        context.interactionNotAllowed = true
        let started = Date()
        XCTAssertEqual(readToken([kSecUseAuthenticationContext as String: context]).0, errSecInteractionNotAllowed)
        XCTAssertLessThan(Date().timeIntervalSince(started), 3, "without waiting for an answer")
        XCTAssertEqual(readToken([kSecUseAuthenticationContext as String: context,
                                  kSecUseAuthenticationUI as String: kSecUseAuthenticationUIAllow]).0,
                       errSecInteractionNotAllowed, "the context forbids it, whatever the query allows")
        XCTAssertEqual(readToken([kSecUseAuthenticationContext as String: context,
                                  kSecUseAuthenticationUI as String: kSecUseAuthenticationUISkip]).0,
                       errSecItemNotFound, "skip still leaves the item out")

        // An evaluated context needs no interaction: its success stands.
        context.interactionNotAllowed = false
        try respond("match")
        let evaluated = try await context.evaluatePolicy(.deviceOwnerAuthenticationWithBiometrics, localizedReason: "Sign in")
        XCTAssertTrue(evaluated)
        context.interactionNotAllowed = true
        XCTAssertEqual(readToken([kSecUseAuthenticationContext as String: context]).1, "s3ss10n")
    }

    func testTheReuseDurationDoesNotReuseAMatchInTheApp() async throws {
        try device.dpfs("biometry", "enroll", device.mountpoint, "--type", "touchID")
        XCTAssertEqual(try storeToken(.biometryCurrentSet), errSecSuccess)
        try respond("match")
        XCTAssertEqual(readToken().1, "s3ss10n")

        // Apple reuses a Touch ID device unlock only; nothing unlocks by biometry here.
        let context = LAContext()
        context.touchIDAuthenticationAllowableReuseDuration = 60
        XCTAssertEqual(context.touchIDAuthenticationAllowableReuseDuration, 60)
        try respond("nomatch")
        do {
            _ = try await context.evaluatePolicy(.deviceOwnerAuthenticationWithBiometrics, localizedReason: "Sign in")
            XCTFail("the read's match must not be reused: the prompt takes the queued answer")
        } catch LAError.authenticationFailed {
        } catch {
            XCTFail("expected LAError.authenticationFailed, got \(error)")
        }
        let status = try device.dpfs("biometry", "status", device.mountpoint)
        XCTAssertTrue(status.contains("queued answers: 0"), status)
    }
}
