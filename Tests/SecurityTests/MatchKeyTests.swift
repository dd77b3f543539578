// The kSecMatch keys besides kSecMatchLimit, and the certificate, view-hint and
// persistent-reference attributes, answered as iOS's keychain answers them for
// passwords: most match keys change nothing, certificate-only ones are refused,
// kSecMatchHostOrSubdomainOfHost filters internet passwords by server.
import Foundation
import Security
import XCTest

final class MatchKeyTests: MountedDeviceTestCase {
    private let item: [String: Any] = [kSecClass as String: kSecClassGenericPassword,
                                       kSecAttrService as String: "Mail", kSecAttrAccount as String: "Alice"]

    private func addItem() {
        var add = item
        add[kSecValueData as String] = Data("pw".utf8)
        XCTAssertEqual(SecItemAdd(add as CFDictionary, nil), errSecSuccess)
    }

    private func find(_ extra: [String: Any], base: [String: Any]? = nil) -> OSStatus {
        SecItemCopyMatching((base ?? item).merging(extra) { $1 } as CFDictionary, nil)
    }

    func testCaseInsensitiveComparesExactlyAsOnIOS() {
        addItem()
        let lower: [String: Any] = [kSecClass as String: kSecClassGenericPassword,
                                    kSecAttrService as String: "mail", kSecAttrAccount as String: "alice"]
        XCTAssertEqual(find([kSecMatchCaseInsensitive as String: true], base: lower), errSecItemNotFound,
                       "iOS's SQL keychain records the key and still compares bytes")
        XCTAssertEqual(find([kSecMatchCaseInsensitive as String: true]), errSecSuccess)
        XCTAssertEqual(find([kSecMatchCaseInsensitive as String: kCFBooleanFalse as Any]), errSecSuccess)
    }

    func testCertificateMatchKeysLeaveAPasswordQueryAlone() {
        addItem()
        XCTAssertEqual(find([kSecMatchValidOnDate as String: Date()]), errSecSuccess)
        XCTAssertEqual(find([kSecMatchValidOnDate as String: NSNull()]), errSecSuccess)
        XCTAssertEqual(find([kSecMatchTrustedOnly as String: true]), errSecSuccess)
        XCTAssertEqual(find([kSecMatchEmailAddressIfPresent as String: "a@example.com"]), errSecSuccess)
        XCTAssertEqual(find([kSecMatchSubjectContains as String: "Example"]), errSecSuccess)
        XCTAssertEqual(find([kSecMatchSearchList as String: [Any]()]), errSecSuccess)
        XCTAssertEqual(find([kSecMatchItemList as String: [Any]()]), errSecSuccess)
        XCTAssertEqual(find([kSecMatchIssuers as String: [Any]()]), errSecSuccess, "no issuer: ignored")
    }

    func testCertificateMatchValuesAreChecked() {
        addItem()
        XCTAssertEqual(find([kSecMatchValidOnDate as String: "today"]), errSecParam)
        XCTAssertEqual(find([kSecMatchTrustedOnly as String: "yes"]), errSecParam)
        XCTAssertEqual(find([kSecMatchEmailAddressIfPresent as String: 1]), errSecParam)
        XCTAssertEqual(find([kSecMatchPolicy as String: "ssl"]), errSecParam, "only a SecPolicy, which there is not")
        XCTAssertEqual(find([kSecMatchIssuers as String: [Data([0x30, 0x00])]]), errSecUnimplemented,
                       "an issuer chain is asked of a password")
        XCTAssertEqual(find([kSecMatchHostOrSubdomainOfHost as String: "example.com"]), errSecUnimplemented,
                       "a host is asked of an internet password only")
        XCTAssertEqual(find([kSecMatchHostOrSubdomainOfHost as String: 1],
                            base: [kSecClass as String: kSecClassInternetPassword]), errSecParam)
    }

    func testAddDeleteAndChangesTakeNoMatchKeys() {
        var add = item
        add[kSecValueData as String] = Data("pw".utf8)
        add[kSecMatchCaseInsensitive as String] = true
        XCTAssertEqual(SecItemAdd(add as CFDictionary, nil), errSecParam)
        XCTAssertEqual(find([:]), errSecItemNotFound, "nothing was added")
        addItem()
        var delete = item
        delete[kSecMatchCaseInsensitive as String] = true
        XCTAssertEqual(SecItemDelete(delete as CFDictionary), errSecParam)
        XCTAssertEqual(find([:]), errSecSuccess, "nothing was deleted")
        let changes: [String: Any] = [kSecAttrLabel as String: "x", kSecMatchCaseInsensitive as String: true]
        XCTAssertEqual(SecItemUpdate(item as CFDictionary, changes as CFDictionary), errSecParam)
        XCTAssertEqual(SecItemUpdate(delete as CFDictionary, [kSecAttrLabel as String: "x"] as CFDictionary),
                       errSecSuccess, "an update's query may carry one")
    }

    func testCertificateAttributesAreNoSuchAttr() {
        addItem()
        XCTAssertEqual(find([kSecAttrIssuer as String: Data([0x30, 0x00])]), errSecNoSuchAttr)
        XCTAssertEqual(find([kSecAttrCertificateType as String: 3]), errSecNoSuchAttr)
        XCTAssertEqual(find([kSecAttrPublicKeyHash as String: Data([1])],
                            base: [kSecClass as String: kSecClassKey]), errSecNoSuchAttr)
        XCTAssertEqual(find([kSecAttrSerialNumber as String: Data([1])],
                            base: [kSecClass as String: kSecClassCertificate]), errSecItemNotFound,
                       "no certificate is ever held here")
    }

    func testViewHintPersistentReferenceItemListAndTokenGroup() {
        addItem()
        XCTAssertEqual(find([kSecAttrSyncViewHint as String: ""]), errSecSuccess, "every item's hint is empty")
        XCTAssertEqual(find([kSecAttrSyncViewHint as String: "Passwords"]), errSecUnimplemented)
        XCTAssertEqual(find([kSecAttrPersistentReference as String: Data([1])]), errSecParam)
        XCTAssertEqual(find([kSecUseItemList as String: [Any]()]), errSecParam)
        XCTAssertEqual(find([kSecAttrAccessGroup as String: kSecAttrAccessGroupToken]), errSecMissingEntitlement)
    }

    func testHostOrSubdomainOfHostFiltersInternetPasswords() {
        for server in ["example.com", "mail.example.com", "badexample.com", "example.org"] {
            let add: [String: Any] = [kSecClass as String: kSecClassInternetPassword, kSecAttrServer as String: server,
                                      kSecAttrAccount as String: "bob", kSecValueData as String: Data(server.utf8)]
            XCTAssertEqual(SecItemAdd(add as CFDictionary, nil), errSecSuccess)
        }
        let query: [String: Any] = [kSecClass as String: kSecClassInternetPassword,
                                    kSecMatchHostOrSubdomainOfHost as String: "example.com",
                                    kSecMatchLimit as String: kSecMatchLimitAll, kSecReturnAttributes as String: true]
        var result: CFTypeRef?
        XCTAssertEqual(SecItemCopyMatching(query as CFDictionary, &result), errSecSuccess)
        let servers = (result as? [[String: Any]])?.compactMap { $0[kSecAttrServer as String] as? String }.sorted()
        XCTAssertEqual(servers, ["example.com", "mail.example.com"])

        var update = query
        update.removeValue(forKey: kSecMatchLimit as String)
        update.removeValue(forKey: kSecReturnAttributes as String)
        XCTAssertEqual(SecItemUpdate(update as CFDictionary, [kSecAttrLabel as String: "ex"] as CFDictionary), errSecSuccess)
        let labelled: [String: Any] = [kSecClass as String: kSecClassInternetPassword, kSecAttrLabel as String: "ex",
                                       kSecMatchLimit as String: kSecMatchLimitAll, kSecReturnAttributes as String: true]
        result = nil
        XCTAssertEqual(SecItemCopyMatching(labelled as CFDictionary, &result), errSecSuccess)
        XCTAssertEqual((result as? [[String: Any]])?.count, 2, "the update changed the two matches only")
        XCTAssertEqual(SecItemDelete(update as CFDictionary), errSecParam)
    }

    func testConstantsCarryApplesStrings() {
        let expected: [(CFString, String)] = [
            (kSecMatchPolicy, "m_Policy"), (kSecMatchItemList, "m_ItemList"), (kSecMatchSearchList, "m_SearchList"),
            (kSecMatchIssuers, "m_Issuers"), (kSecMatchEmailAddressIfPresent, "m_EmailAddressIfPresent"),
            (kSecMatchSubjectContains, "m_SubjectContains"), (kSecMatchHostOrSubdomainOfHost, "m_HostOrSubdomainOfHost"),
            (kSecMatchCaseInsensitive, "m_CaseInsensitive"), (kSecMatchTrustedOnly, "m_TrustedOnly"),
            (kSecMatchValidOnDate, "m_ValidOnDate"), (kSecAttrSubject, "subj"), (kSecAttrIssuer, "issr"),
            (kSecAttrSerialNumber, "slnr"), (kSecAttrSubjectKeyID, "skid"), (kSecAttrPublicKeyHash, "pkhh"),
            (kSecAttrCertificateType, "ctyp"), (kSecAttrCertificateEncoding, "cenc"), (kSecAttrSyncViewHint, "vwht"),
            (kSecAttrPersistentReference, "persistref"), (kSecAttrPersistantReference, "persistref"),
            (kSecAttrAccessGroupToken, "com.apple.token"), (kSecUseItemList, "u_ItemList"),
        ]
        for (constant, string) in expected { XCTAssertEqual(constant, string) }
    }
}
