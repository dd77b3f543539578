// The value types iOS's keychain accepts beyond the obvious one, as ported wrappers
// use them: blob attributes (account, service, …) given as Data, compared with a
// String by their bytes and returned as given; kSecAttrCreator and kSecAttrType as
// text; and the SecAccessControl every item's attributes carry, which goes back in.
import Foundation
import Security
import XCTest

final class SecItemAttributeValueTypeTests: MountedDeviceTestCase {
    /// SwiftKeychainWrapper's calls: account and generic as the key's UTF-8 bytes.
    func testAnAccountGivenAsDataIsFoundByItsBytes() throws {
        let service: [String: Any] = [kSecClass as String: kSecClassGenericPassword, kSecAttrService as String: "wrapper"]
        let byData = service.merging([kSecAttrAccount as String: Data("k".utf8), kSecAttrGeneric as String: Data("k".utf8)]) { $1 }
        XCTAssertEqual(SecItemAdd(byData.merging([kSecValueData as String: Data("v1".utf8)]) { $1 } as CFDictionary, nil),
                       errSecSuccess)

        let byText = service.merging([kSecAttrAccount as String: "k"]) { $1 }
        XCTAssertEqual(foundData(byText).1, Data("v1".utf8))
        XCTAssertEqual(foundData(byData).1, Data("v1".utf8))
        XCTAssertEqual(try foundAttributes(byText)[kSecAttrAccount as String] as? Data, Data("k".utf8))
        XCTAssertEqual(SecItemAdd(byText.merging([kSecValueData as String: Data()]) { $1 } as CFDictionary, nil),
                       errSecDuplicateItem)

        XCTAssertEqual(SecItemUpdate(byData as CFDictionary, [kSecValueData as String: Data("v2".utf8)] as CFDictionary),
                       errSecSuccess)
        XCTAssertEqual(foundData(byText).1, Data("v2".utf8))
        // Changed to text, the account comes back as text.
        XCTAssertEqual(SecItemUpdate(byData as CFDictionary, [kSecAttrAccount as String: "k"] as CFDictionary),
                       errSecSuccess)
        XCTAssertEqual(try foundAttributes(byData)[kSecAttrAccount as String] as? String, "k")
        XCTAssertEqual(SecItemDelete(byData as CFDictionary), errSecSuccess)
        XCTAssertEqual(foundData(byText).0, errSecItemNotFound)
    }

    func testBytesThatAreNoTextWork() throws {
        let bytes = Data([0xff, 0x00, 0xfe, 0x80])
        let item: [String: Any] = [kSecClass as String: kSecClassGenericPassword, kSecAttrService as String: bytes,
                                   kSecAttrAccount as String: Data()]
        XCTAssertEqual(SecItemAdd(item.merging([kSecValueData as String: Data("s".utf8)]) { $1 } as CFDictionary, nil),
                       errSecSuccess)
        let found = try foundAttributes(item)
        XCTAssertEqual(found[kSecAttrService as String] as? Data, bytes)
        XCTAssertEqual(found[kSecAttrAccount as String] as? Data, Data())
        XCTAssertEqual(foundData([kSecClass as String: kSecClassGenericPassword, kSecAttrService as String: bytes]).1,
                       Data("s".utf8))
        let other = [kSecClass as String: kSecClassGenericPassword, kSecAttrService as String: Data([0xff])] as [String: Any]
        XCTAssertEqual(foundData(other).0, errSecItemNotFound)

        let inet: [String: Any] = [kSecClass as String: kSecClassInternetPassword, kSecAttrServer as String: "h",
                                   kSecAttrPath as String: Data([0xc3]), kSecAttrSecurityDomain as String: Data("d".utf8)]
        XCTAssertEqual(SecItemAdd(inet.merging([kSecValueData as String: Data()]) { $1 } as CFDictionary, nil), errSecSuccess)
        let inetFound = try foundAttributes(inet.merging([kSecAttrSecurityDomain as String: "d"]) { $1 })
        XCTAssertEqual(inetFound[kSecAttrPath as String] as? Data, Data([0xc3]))
        XCTAssertEqual(inetFound[kSecAttrServer as String] as? String, "h")
    }

    func testTypesIOSChecksStayChecked() {
        let inet: [String: Any] = [kSecClass as String: kSecClassInternetPassword, kSecAttrServer as String: "h",
                                   kSecValueData as String: Data()]
        for (key, value) in [(kSecAttrPort, "443" as Any), (kSecAttrPort, Data([1]) as Any)] {
            XCTAssertEqual(SecItemAdd(inet.merging([key as String: value]) { $1 } as CFDictionary, nil), errSecParam, "\(key)")
        }
    }

    /// KeychainAccess's own tests set kSecAttrCreator to "Creator Test".
    func testCreatorAndTypeMayBeText() throws {
        let item: [String: Any] = [kSecClass as String: kSecClassGenericPassword, kSecAttrService as String: "kc",
                                   kSecAttrCreator as String: "Creator Test", kSecAttrType as String: "42",
                                   kSecValueData as String: Data()]
        XCTAssertEqual(SecItemAdd(item as CFDictionary, nil), errSecSuccess)
        let query: [String: Any] = [kSecClass as String: kSecClassGenericPassword, kSecAttrCreator as String: "Creator Test"]
        let found = try foundAttributes(query)
        XCTAssertEqual(found[kSecAttrCreator as String] as? String, "Creator Test")
        // The decimal form of a number is that number, as securityd's copyNumber makes it.
        XCTAssertEqual(found[kSecAttrType as String] as? Int, 42)
        XCTAssertEqual(try foundAttributes(query.merging([kSecAttrType as String: 42]) { $1 })[kSecAttrService as String] as? String,
                       "kc")
        XCTAssertEqual(foundData(query.merging([kSecAttrCreator as String: "Creator"]) { $1 }).0, errSecItemNotFound)
    }

    /// iOS 11.3 and later: every item's attributes carry a SecAccessControl of its
    /// accessibility, and such an access control, given back, is that accessibility.
    func testEveryItemHasAnAccessControl() throws {
        let item: [String: Any] = [kSecClass as String: kSecClassGenericPassword, kSecAttrService as String: "plain",
                                   kSecAttrAccessible as String: kSecAttrAccessibleAfterFirstUnlock]
        XCTAssertEqual(SecItemAdd(item.merging([kSecValueData as String: Data("t".utf8)]) { $1 } as CFDictionary, nil),
                       errSecSuccess)
        let found = try foundAttributes(item)
        let access = try XCTUnwrap(found[kSecAttrAccessControl as String] as? SecAccessControl)
        XCTAssertEqual(access.flags, [])
        XCTAssertEqual(access.protection, kSecAttrAccessibleAfterFirstUnlock)

        let byAccess: [String: Any] = [kSecClass as String: kSecClassGenericPassword, kSecAttrService as String: "plain",
                                       kSecAttrAccessControl as String: access]
        XCTAssertEqual(foundData(byAccess).1, Data("t".utf8))
        XCTAssertEqual(SecItemUpdate(item as CFDictionary, [kSecAttrAccessControl as String: access] as CFDictionary),
                       errSecSuccess)
        XCTAssertEqual(try foundAttributes(item)[kSecAttrAccessible as String] as? String, kSecAttrAccessibleAfterFirstUnlock)

        // An add carrying it, as one that copies another item's attributes: no prompt.
        let copy: [String: Any] = [kSecClass as String: kSecClassGenericPassword, kSecAttrService as String: "copy",
                                   kSecAttrAccessControl as String: access, kSecValueData as String: Data("c".utf8)]
        XCTAssertEqual(SecItemAdd(copy as CFDictionary, nil), errSecSuccess)
        var noPrompt: [String: Any] = [kSecClass as String: kSecClassGenericPassword, kSecAttrService as String: "copy"]
        noPrompt[kSecUseAuthenticationUI as String] = kSecUseAuthenticationUIFail
        XCTAssertEqual(foundData(noPrompt).1, Data("c".utf8))
        XCTAssertEqual((try foundAttributes(noPrompt)[kSecAttrAccessControl as String] as? SecAccessControl)?.flags, [])
    }
}
