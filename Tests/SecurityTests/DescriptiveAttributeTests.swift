// kSecAttrDescription, Comment, Generic, Creator, Type, IsInvisible and IsNegative
// through SecItem, with Apple's value types: given and read back, matched, updated;
// a value of the wrong type is errSecParam.
import Foundation
import Security
import XCTest

final class SecItemDescriptiveAttributeTests: MountedDeviceTestCase {
    private let query: [String: Any] = [kSecClass as String: kSecClassGenericPassword,
                                        kSecAttrService as String: "notes"]

    private func attributes(_ extra: [String: Any]) throws -> [String: Any] {
        var find = query.merging(extra) { $1 }
        find[kSecReturnAttributes as String] = true
        var result: CFTypeRef?
        let status = SecItemCopyMatching(find as CFDictionary, &result)
        XCTAssertEqual(status, errSecSuccess)
        return try XCTUnwrap(result as? [String: Any])
    }

    func testAppleValueTypesRoundTrip() throws {
        let creator: FourCharCode = 0x6161_706c  // 'aapl'
        var item = query
        item[kSecValueData as String] = Data("pw".utf8)
        item[kSecAttrDescription as String] = "Notes sync token"
        item[kSecAttrComment as String] = "rotated monthly"
        item[kSecAttrGeneric as String] = Data([0, 1, 0xfe])
        item[kSecAttrCreator as String] = creator
        item[kSecAttrType as String] = 7
        item[kSecAttrIsInvisible as String] = kCFBooleanTrue as Any
        item[kSecAttrIsNegative as String] = false
        XCTAssertEqual(SecItemAdd(item as CFDictionary, nil), errSecSuccess)

        let found = try attributes([kSecAttrGeneric as String: Data([0, 1, 0xfe])])
        XCTAssertEqual(found[kSecAttrDescription as String] as? String, "Notes sync token")
        XCTAssertEqual(found[kSecAttrComment as String] as? String, "rotated monthly")
        XCTAssertEqual(found[kSecAttrGeneric as String] as? Data, Data([0, 1, 0xfe]))
        XCTAssertEqual(found[kSecAttrCreator as String] as? Int, Int(creator))
        XCTAssertEqual(found[kSecAttrType as String] as? Int, 7)
        XCTAssertEqual(found[kSecAttrIsInvisible as String] as? Bool, true)
        XCTAssertEqual(found[kSecAttrIsNegative as String] as? Bool, false)

        var other = query.merging([kSecAttrGeneric as String: Data([9])]) { $1 }
        var result: CFTypeRef?
        XCTAssertEqual(SecItemCopyMatching(other as CFDictionary, &result), errSecItemNotFound)
        other = query.merging([kSecAttrCreator as String: creator]) { $1 }
        XCTAssertEqual(SecItemCopyMatching(other as CFDictionary, &result), errSecSuccess)

        let changes: [String: Any] = [kSecAttrComment as String: "rotated weekly"]
        XCTAssertEqual(SecItemUpdate(query as CFDictionary, changes as CFDictionary), errSecSuccess)
        XCTAssertEqual(try attributes([kSecAttrComment as String: "rotated weekly"])[kSecAttrType as String] as? Int, 7)
    }

    func testWrongValueTypesAreErrSecParam() {
        for (key, value) in [(kSecAttrGeneric, 7 as Any), (kSecAttrCreator, -1), (kSecAttrType, Data([1])),
                             (kSecAttrIsInvisible, "yes"), (kSecAttrComment, 7)] {
            var item = query
            item[key as String] = value
            XCTAssertEqual(SecItemAdd(item as CFDictionary, nil), errSecParam, "\(key)")
        }
        var key = [kSecClass as String: kSecClassKey, kSecAttrComment as String: "x"] as [String: Any]
        key[kSecAttrApplicationTag as String] = Data("tag".utf8)
        var result: CFTypeRef?
        XCTAssertEqual(SecItemCopyMatching(key as CFDictionary, &result), errSecParam)
    }
}
