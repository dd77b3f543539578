// SecCopyErrorMessageString gives Apple's sentence, word for word, for the statuses
// dpfs answers and the others it defines, and Apple's "OSStatus <n>" for the rest.
import Security
import XCTest

final class SecErrorMessageTests: XCTestCase {
    private func message(_ status: OSStatus) -> String? {
        SecCopyErrorMessageString(status, nil) as String?
    }

    func testStatusesDpfsAnswersReadAsOnIOS() {
        XCTAssertEqual(message(errSecItemNotFound), "The specified item could not be found in the keychain.")
        XCTAssertEqual(message(errSecDuplicateItem), "The specified item already exists in the keychain.")
        // Also when the cause is kSecUseAuthenticationUIFail, not the lock.
        XCTAssertEqual(message(errSecInteractionNotAllowed), "User interaction is not allowed.")
        XCTAssertEqual(message(errSecUserCanceled), "User canceled the operation.")
        XCTAssertEqual(message(errSecAllocate), "Failed to allocate memory.")
        XCTAssertEqual(message(errSecNoSuchAttr), "The specified attribute does not exist.")
        XCTAssertEqual(message(errSecVerifyFailed), "A cryptographic verification failure has occurred.")
        XCTAssertEqual(message(errSecParam), "One or more parameters passed to a function were not valid.")
        XCTAssertEqual(message(errSecMissingEntitlement), "A required entitlement isn't present.")
        XCTAssertEqual(message(errSecNotAvailable), "No keychain is available. You may need to restart your computer.")
        XCTAssertEqual(message(errSecDecode), "Unable to decode the provided data.")
        XCTAssertEqual(message(errSecIO), "I/O error.")
    }

    func testAStatusWithoutASentenceNamesItsNumber() {
        XCTAssertEqual(message(-99_999), "OSStatus -99999")
        XCTAssertEqual(message(errSecInternalComponent), "OSStatus -2070")
    }
}
