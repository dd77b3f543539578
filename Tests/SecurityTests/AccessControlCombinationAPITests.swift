// SecAccessControlCreateWithFlags refuses the flag combinations Apple's
// SecAccessControl.c refuses, with an errSecParam CFError.
import Foundation
import Security
import XCTest

final class AccessControlCombinationAPITests: XCTestCase {
    func testCreateWithFlagsRefusesAppleRefusedCombinations() {
        let refused: [SecAccessControlCreateFlags] = [[.biometryAny, .biometryCurrentSet], [.userPresence, .devicePasscode],
                                                      [.userPresence, .biometryAny, .or]]
        for flags in refused {
            var error: Unmanaged<CFError>?
            XCTAssertNil(SecAccessControlCreateWithFlags(nil, kSecAttrAccessibleWhenUnlocked, flags, &error), "\(flags)")
            XCTAssertEqual(error.map { CFErrorGetCode($0.takeRetainedValue()) }, CFIndex(errSecParam))
        }
        XCTAssertNotNil(SecAccessControlCreateWithFlags(nil, kSecAttrAccessibleWhenUnlocked, [.userPresence, .privateKeyUsage], nil))
    }
}
