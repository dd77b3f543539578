// LAContext.invalidate() while its evaluation waits for the user, or before the daemon
// has received it, against a mounted device: the evaluation fails at once with
// LAError.appCancel, the answer given afterwards is left for the next prompt, and the
// context opens nothing again.
import Foundation
import LocalAuthentication
import Security
import XCTest

final class LAContextInvalidationTests: MountedDeviceTestCase {
    private let token: [String: Any] = [kSecClass as String: kSecClassGenericPassword,
                                        kSecAttrService as String: "com.example.bank", kSecAttrAccount as String: "token"]

    private func biometryStatus() throws -> [String: Any] {
        let json = try device.dpfs("biometry", "status", device.mountpoint, "--json")
        return (try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any]) ?? [:]
    }

    /// Polls until `key` of the biometry status is `value`; false after 30 s.
    private func waitForStatus(_ key: String, _ value: Int) throws -> Bool {
        let deadline = Date().addingTimeInterval(30)
        while Date() < deadline {
            if try biometryStatus()[key] as? Int == value { return true }
            usleep(20_000)
        }
        return false
    }

    func testInvalidatingEndsTheEvaluationAndTheContextOpensNothing() async throws {
        try device.dpfs("biometry", "enroll", device.mountpoint)
        guard let access = SecAccessControlCreateWithFlags(kCFAllocatorDefault, kSecAttrAccessibleWhenUnlockedThisDeviceOnly,
                                                           .biometryCurrentSet, nil) else {
            return XCTFail("no access control")
        }
        var item = token
        item[kSecAttrAccessControl as String] = access
        item[kSecValueData as String] = Data("s3ss10n".utf8)
        XCTAssertEqual(SecItemAdd(item as CFDictionary, nil), errSecSuccess)
        try device.dpfs("biometry", "timeout", device.mountpoint, "9")

        let context = LAContext()
        let replied = expectation(description: "reply")
        let started = Date()
        context.evaluatePolicy(.deviceOwnerAuthenticationWithBiometrics, localizedReason: "Sign in") { success, error in
            XCTAssertFalse(success)
            XCTAssertEqual((error as? LAError)?.code, .appCancel)
            XCTAssertLessThan(Date().timeIntervalSince(started), 8, "ended by the invalidation, not the prompt's timeout")
            replied.fulfill()
        }
        XCTAssertTrue(try waitForStatus("prompts", 1), "the evaluation's prompt waits for an answer")
        context.invalidate()
        await fulfillment(of: [replied], timeout: 30)

        try device.dpfs("biometry", "respond", device.mountpoint, "match")
        var query = token
        query[kSecReturnData as String] = kCFBooleanTrue
        query[kSecUseAuthenticationContext as String] = context
        query[kSecUseAuthenticationUI as String] = kSecUseAuthenticationUIFail
        var result: CFTypeRef?
        XCTAssertEqual(SecItemCopyMatching(query as CFDictionary, &result), errSecInteractionNotAllowed)
        XCTAssertNil(result)
        query[kSecUseAuthenticationUI as String] = kSecUseAuthenticationUIAllow
        XCTAssertEqual(SecItemCopyMatching(query as CFDictionary, &result), errSecAuthFailed,
                       "an invalidated context authorizes nothing, and asks for nothing")
        XCTAssertEqual(try biometryStatus()["queued"] as? Int, 1, "the match waits for the next prompt")
        try device.dpfs("biometry", "clear", device.mountpoint)
    }

    /// invalidate() called right after evaluatePolicy, before the evaluation's thread
    /// has sent it to the daemon (or before the daemon has received it): the app asked
    /// for the evaluation first, so it is cancelled (.appCancel), never refused as an
    /// evaluation of a context already invalid. A context invalidated before
    /// evaluatePolicy is called is that one (.invalidContext).
    func testInvalidatingRightAfterEvaluatePolicyCancelsTheEvaluation() async throws {
        try device.dpfs("biometry", "enroll", device.mountpoint)
        for attempt in 1...6 {
            let context = LAContext()
            let replied = expectation(description: "reply \(attempt)")
            context.evaluatePolicy(.deviceOwnerAuthenticationWithBiometrics, localizedReason: "Sign in") { success, error in
                XCTAssertFalse(success)
                XCTAssertEqual((error as? LAError)?.code, .appCancel, "attempt \(attempt): \(String(describing: error))")
                replied.fulfill()
            }
            if attempt.isMultiple(of: 2) {
                context.invalidate()
            } else {
                let invalidating = Thread { context.invalidate() }
                invalidating.start()
            }
            await fulfillment(of: [replied], timeout: 30)
        }
        XCTAssertTrue(try waitForStatus("prompts", 0), "no evaluation's prompt is left waiting")

        let context = LAContext()
        context.invalidate()
        do {
            _ = try await context.evaluatePolicy(.deviceOwnerAuthenticationWithBiometrics, localizedReason: "Sign in")
            XCTFail("an evaluation of a context invalidated before succeeded")
        } catch {
            XCTAssertEqual((error as? LAError)?.code, .invalidContext)
        }
    }
}
