// The vault's tests, as an iOS team writes them, with the user played from the test:
// on Linux by dpfs's DeviceControl (run under `dpfs run --device-control`). Where no
// such control exists (a Simulator), the tests that need an answer are skipped.
import BiometricVault
import Foundation
import LocalAuthentication
import Security
import XCTest
#if canImport(DataProtectionKit)
import DataProtectionKit
#endif

final class BiometricVaultTests: XCTestCase {
    let vault = BiometricVault(service: "com.example.bank")

    /// The simulated user: enroll, answer the next prompt.
    enum User {
        case match, stranger, cancel
    }

    /// A face enrolled and no answer left queued by a test that failed before its
    /// prompt came.
    func enroll() throws {
        #if canImport(DataProtectionKit)
        let device = try DeviceControl()
        try device.clearBiometryResponses()
        try device.enrollBiometry(.faceID)
        #else
        throw XCTSkip("no way to enroll a face from this test")
        #endif
    }

    func reenroll() throws {
        #if canImport(DataProtectionKit)
        try DeviceControl().reenrollBiometry()
        #else
        throw XCTSkip("no way to re-enroll a face from this test")
        #endif
    }

    func user(answers answer: User, times: Int = 1) throws {
        #if canImport(DataProtectionKit)
        let response: BiometryResponse = switch answer {
        case .match: .match
        case .stranger: .nomatch
        case .cancel: .cancel
        }
        try DeviceControl().respondToBiometry(response, times: times)
        #else
        throw XCTSkip("no way to answer Face ID from this test")
        #endif
    }

    override func setUpWithError() throws {
        try enroll()
        vault.delete(account: "token")
    }

    override func tearDown() {
        vault.delete(account: "token")
    }

    func testFaceIDIsAvailable() {
        let (type, error) = BiometricVault.availability()
        XCTAssertEqual(type, .faceID)
        XCTAssertNil(error)
    }

    func testTheUsersFaceReadsTheToken() throws {
        try vault.store("s3ss10n", account: "token")
        try user(answers: .match)
        XCTAssertEqual(try vault.read(account: "token", prompt: "Sign in"), "s3ss10n")
    }

    func testAStrangerAndACancelDoNot() throws {
        try vault.store("s3ss10n", account: "token")
        try user(answers: .stranger)
        XCTAssertThrowsError(try vault.read(account: "token", prompt: "Sign in")) {
            XCTAssertEqual($0 as? VaultError, .authenticationFailed)
        }
        try user(answers: .cancel)
        XCTAssertThrowsError(try vault.read(account: "token", prompt: "Sign in")) {
            XCTAssertEqual($0 as? VaultError, .cancelled)
        }
        XCTAssertThrowsError(try vault.read(account: "token", prompt: "Sign in", allowPrompt: false)) {
            XCTAssertEqual($0 as? VaultError, .interactionNotAllowed)
        }
        try user(answers: .match)  // a successful match resets the failed matches for later tests
        _ = try vault.read(account: "token", prompt: "Sign in")
    }

    func testOneSignInServesSeveralReads() async throws {
        try vault.store("s3ss10n", account: "token")
        try user(answers: .match)
        let context = try await vault.signIn(reason: "Sign in to your bank")
        for _ in 0..<3 {
            XCTAssertEqual(try vault.read(account: "token", prompt: "Sign in", context: context, allowPrompt: false), "s3ss10n")
        }
        try user(answers: .cancel)
        do {
            _ = try await vault.signIn(reason: "Sign in to your bank")
            XCTFail("a cancelled sign-in must throw")
        } catch VaultError.cancelled {
        }
    }

    func testANewFaceInvalidatesTheToken() throws {
        try vault.store("s3ss10n", account: "token")
        try reenroll()
        XCTAssertThrowsError(try vault.read(account: "token", prompt: "Sign in")) {
            XCTAssertEqual($0 as? VaultError, .notFound)
        }
    }
}
