// iOS's other blob attributes: kSecAttrLabel, kSecAttrDescription, kSecAttrComment
// and kSecAttrServer given as Data, kSecAttrGeneric given as a String. Each compares
// with the other type by its bytes, in a query, an update's query and a delete, and
// comes back in the type it was last given.
import Foundation
import Security
import XCTest

final class SecItemBlobAttributeTypeTests: MountedDeviceTestCase {
    /// The same type and value: Data and String never equal each other here.
    private func same(_ found: Any?, _ expected: Any) -> Bool {
        if let expected = expected as? Data { return found as? Data == expected }
        if let expected = expected as? String { return found as? String == expected }
        return false
    }

    private func merged(_ base: [String: Any], _ more: [String: Any]) -> [String: Any] {
        base.merging(more) { $1 }
    }

    /// Adds an item with `key` given as `given`, then finds, updates, finds again and
    /// deletes it with the value in the other type (`other`).
    private func roundTrip(itemClass: String, base: [String: Any], key: String, given: Any, other: Any,
                           changed: Any, changedOther: Any) throws {
        let item = merged(merged(base, [kSecClass as String: itemClass]), [key: given])
        XCTAssertEqual(SecItemAdd(merged(item, [kSecValueData as String: Data("v1".utf8)]) as CFDictionary, nil),
                       errSecSuccess, "\(key)")
        let byOther = merged(item, [key: other])
        XCTAssertEqual(foundData(byOther).1, Data("v1".utf8), "\(key) found by the other type")
        let found = try foundAttributes(byOther)
        XCTAssertTrue(same(found[key], given), "\(key) comes back as given: \(String(describing: found[key]))")
        XCTAssertEqual(foundData(merged(item, [key: changedOther])).0, errSecItemNotFound, "\(key): other bytes match none")

        XCTAssertEqual(SecItemUpdate(byOther as CFDictionary, [kSecValueData as String: Data("v2".utf8)] as CFDictionary),
                       errSecSuccess, "\(key) as an update's query")
        XCTAssertEqual(foundData(item).1, Data("v2".utf8))
        XCTAssertEqual(SecItemUpdate(item as CFDictionary, [key: changed] as CFDictionary), errSecSuccess,
                       "\(key) as an update's new value")
        let changedItem = merged(item, [key: changedOther])
        let changedValue = try foundAttributes(changedItem)[key]
        XCTAssertTrue(same(changedValue, changed), "\(key) takes the new type: \(String(describing: changedValue))")
        XCTAssertEqual(SecItemDelete(merged(item, [key: changedOther]) as CFDictionary), errSecSuccess, "\(key) delete")
        XCTAssertEqual(foundData(merged(item, [key: changed])).0, errSecItemNotFound)
    }

    private let genp: [String: Any] = [kSecAttrService as String: "blob", kSecAttrAccount as String: "a"]
    private let inet: [String: Any] = [kSecAttrServer as String: "h.example", kSecAttrAccount as String: "a"]

    func testLabelAsData() throws {
        for (itemClass, base) in [(kSecClassGenericPassword, genp), (kSecClassInternetPassword, inet)] {
            try roundTrip(itemClass: itemClass, base: base, key: kSecAttrLabel as String, given: Data("L".utf8),
                          other: "L", changed: "M", changedOther: Data("M".utf8))
            try roundTrip(itemClass: itemClass, base: base, key: kSecAttrLabel as String, given: Data([0xff, 0]),
                          other: Data([0xff, 0]), changed: Data([0xfe]), changedOther: Data([0xfe]))
        }
    }

    func testDescriptionAsData() throws {
        for (itemClass, base) in [(kSecClassGenericPassword, genp), (kSecClassInternetPassword, inet)] {
            try roundTrip(itemClass: itemClass, base: base, key: kSecAttrDescription as String, given: Data("d".utf8),
                          other: "d", changed: "e", changedOther: Data("e".utf8))
        }
    }

    func testCommentAsData() throws {
        for (itemClass, base) in [(kSecClassGenericPassword, genp), (kSecClassInternetPassword, inet)] {
            try roundTrip(itemClass: itemClass, base: base, key: kSecAttrComment as String, given: Data("c".utf8),
                          other: "c", changed: "n", changedOther: Data("n".utf8))
        }
    }

    func testGenericAsString() throws {
        try roundTrip(itemClass: kSecClassGenericPassword, base: genp, key: kSecAttrGeneric as String, given: "g",
                      other: Data("g".utf8), changed: Data([0xff]), changedOther: Data([0xff]))
        try roundTrip(itemClass: kSecClassGenericPassword, base: genp, key: kSecAttrGeneric as String,
                      given: Data("h".utf8), other: "h", changed: "i", changedOther: Data("i".utf8))
    }

    func testServerAsDataIsOneIdentityWithItsText() throws {
        let key = kSecAttrServer as String
        let base: [String: Any] = [kSecAttrAccount as String: "a"]
        try roundTrip(itemClass: kSecClassInternetPassword, base: base, key: key, given: Data("h".utf8), other: "h",
                      changed: "g", changedOther: Data("g".utf8))

        let item = merged(base, [kSecClass as String: kSecClassInternetPassword, key: Data("h".utf8),
                                 kSecValueData as String: Data()])
        XCTAssertEqual(SecItemAdd(item as CFDictionary, nil), errSecSuccess)
        XCTAssertEqual(SecItemAdd(merged(item, [key: "h"]) as CFDictionary, nil), errSecDuplicateItem)
        // kSecMatchHostOrSubdomainOfHost reads the server's bytes as text.
        var host = merged(base, [kSecClass as String: kSecClassInternetPassword])
        host[kSecMatchHostOrSubdomainOfHost as String] = "h"
        XCTAssertEqual(try foundAttributes(host)[key] as? Data, Data("h".utf8))
    }
}
