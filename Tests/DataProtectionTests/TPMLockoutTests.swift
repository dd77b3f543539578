// What an unlock refused by a TPM's dictionary-attack lockout says of its end: the
// longest it can last from the TPM's counts, never a time it cannot know.
import DPFSProtocol
import DataProtection
import XCTest

final class TPMLockoutTests: XCTestCase {
    func testALockoutAtTheLimitEndsWithinOneRecoveryTime() {
        let lockout = TPMLockout(counter: 3, maxTries: 3, recoveryTime: 600)
        XCTAssertEqual(lockout.endsWithin, 600)
        XCTAssertEqual(lockout.description,
                       "the TPM's dictionary-attack lockout is in force (3 failed authorizations, 3 allowed): "
                       + "no passcode was tried; it ends within 10 min 0 s of the TPM running, maybe sooner "
                       + "(the TPM forgets one failure every 10 min 0 s)")
    }

    func testEachFailureOverTheLimitAddsARecoveryTime() {
        XCTAssertEqual(TPMLockout(counter: 5, maxTries: 3, recoveryTime: 10).endsWithin, 30)
    }

    func testARecoveryTimeOfZeroPromisesNoEnd() {
        let lockout = TPMLockout(counter: 3, maxTries: 3, recoveryTime: 0)
        XCTAssertNil(lockout.endsWithin)
        XCTAssertTrue(lockout.description.hasSuffix("it ends only when the TPM's owner resets it"), lockout.description)
    }
}
