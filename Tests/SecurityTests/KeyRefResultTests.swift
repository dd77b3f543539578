// A key item a find cannot make a SecKey of (a damaged row, or one without its public
// key) fails the find with errSecDecode instead of answering success with NSNull.
import DPFSProtocol
import Foundation
@testable import Security
import XCTest

final class KeyRefResultTests: XCTestCase {
    func testAKeyItemWithoutAPublicKeyGivesNoRef() throws {
        let query = try SecItemQuery([kSecClass as String: kSecClassKey, kSecReturnRef as String: true], role: .query)
        let stored = KeychainResponse.Item(attributes: ["class": kSecClassKey, "keyClass": "private"], data: Data(count: 97))
        let object = try? SecItemResult.object(for: KeychainResponse(status: 0, items: [stored]), query)
        XCTAssertNil(object ?? nil, "no NSNull in place of a SecKey")
    }
}
