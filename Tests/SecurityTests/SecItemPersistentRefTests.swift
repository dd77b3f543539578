// kSecValuePersistentRef as apps store it: the ref names the item, so it keeps finding
// it after SecItemUpdate changes the account, service or access group, and after the
// daemon restarts; another app's query with it, or a deleted item's, finds nothing.
import Foundation
import Security
import XCTest

final class SecItemPersistentRefTests: MountedDeviceTestCase {
    private let team = "ABCDE12345"

    private func data(byRef ref: Data) -> (OSStatus, String?) {
        let query: [String: Any] = [kSecValuePersistentRef as String: ref, kSecReturnData as String: true]
        var result: CFTypeRef?
        let status = SecItemCopyMatching(query as CFDictionary, &result)
        return (status, (result as? Data).map { String(decoding: $0, as: UTF8.self) })
    }

    func testARefOutlivesUpdatesOfTheItemsIdentityAndRestarts() throws {
        try device.addApp("\(team).com.example.mail", groups: ["\(team).com.example.mail", "\(team).shared"])
        setenv("DPFS_APP", "com.example.mail", 1)
        let item: [String: Any] = [kSecClass as String: kSecClassGenericPassword, kSecAttrService as String: "svc",
                                   kSecAttrAccount as String: "a"]
        var adding = item
        adding[kSecValueData as String] = Data("pw".utf8)
        adding[kSecReturnPersistentRef as String] = true
        var result: CFTypeRef?
        XCTAssertEqual(SecItemAdd(adding as CFDictionary, &result), errSecSuccess)
        let ref = try XCTUnwrap(result as? Data)

        XCTAssertEqual(SecItemUpdate(item as CFDictionary, [kSecAttrAccount as String: "b"] as CFDictionary), errSecSuccess)
        XCTAssertEqual(data(byRef: ref).1, "pw")
        let renamed: [String: Any] = [kSecClass as String: kSecClassGenericPassword, kSecAttrAccount as String: "b"]
        let moved: [String: Any] = [kSecAttrService as String: "other", kSecAttrAccessGroup as String: "\(team).shared"]
        XCTAssertEqual(SecItemUpdate(renamed as CFDictionary, moved as CFDictionary), errSecSuccess)
        XCTAssertEqual(data(byRef: ref).1, "pw")

        // A find returns the same ref, and the attributes dictionary stays Apple's.
        let refQuery: [String: Any] = [kSecClass as String: kSecClassGenericPassword, kSecAttrService as String: "other",
                                       kSecReturnPersistentRef as String: true, kSecReturnAttributes as String: true]
        XCTAssertEqual(SecItemCopyMatching(refQuery as CFDictionary, &result), errSecSuccess)
        let found = try XCTUnwrap(result as? [String: Any])
        XCTAssertEqual(found[kSecValuePersistentRef as String] as? Data, ref)
        XCTAssertNil(found["persistentRef"])

        try device.restart()
        try device.unlock()
        XCTAssertEqual(data(byRef: ref).1, "pw")

        // Another app of the team, which cannot read the group the item was in first.
        try device.addApp("\(team).com.example.notes", groups: ["\(team).com.example.notes"])
        setenv("DPFS_APP", "com.example.notes", 1)
        XCTAssertEqual(data(byRef: ref).0, errSecItemNotFound)
        XCTAssertEqual(SecItemDelete([kSecValuePersistentRef as String: ref] as CFDictionary), errSecItemNotFound)

        setenv("DPFS_APP", "com.example.mail", 1)
        XCTAssertEqual(SecItemDelete([kSecValuePersistentRef as String: ref] as CFDictionary), errSecSuccess)
        XCTAssertEqual(data(byRef: ref).0, errSecItemNotFound)
    }
}
