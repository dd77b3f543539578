// The wrapper's tests, as they would run on an iOS simulator. They need a device:
// DPFS_MOUNT names the mounted dpfs sandbox.
import Foundation
import KeychainWrapper
import Security
import XCTest

final class KeychainWrapperTests: XCTestCase {
    let keychain = KeychainWrapper(service: "com.example.fixture")

    override func tearDown() {
        for account in ["alice", "bob"] { try? keychain.delete(account: account) }
    }

    func testSaveLoadUpdateDelete() throws {
        try keychain.save("s3cret", account: "alice")
        XCTAssertEqual(try keychain.load(account: "alice"), "s3cret")
        XCTAssertThrowsError(try keychain.save("again", account: "alice")) {
            XCTAssertEqual($0 as? KeychainError, .duplicateItem)
        }
        try keychain.update("n3w", account: "alice")
        XCTAssertEqual(try keychain.load(account: "alice"), "n3w")
        try keychain.set("set", account: "alice")
        XCTAssertEqual(try keychain.load(account: "alice"), "set")
        try keychain.delete(account: "alice")
        XCTAssertThrowsError(try keychain.load(account: "alice")) {
            XCTAssertEqual($0 as? KeychainError, .itemNotFound)
        }
    }

    func testAccountsListsEveryItemOfTheService() throws {
        try keychain.save("a", account: "alice")
        try keychain.save("b", account: "bob", accessible: kSecAttrAccessibleAfterFirstUnlock)
        XCTAssertEqual(try keychain.accounts(), ["alice", "bob"])
    }

    func testConstantsCarryApplesValues() {
        XCTAssertEqual(kSecClass as String, "class")
        XCTAssertEqual(kSecAttrAccessGroup as String, "agrp")
        XCTAssertEqual(kSecAttrAccessibleWhenUnlocked as String, "ak")
        XCTAssertEqual(errSecInteractionNotAllowed, -25308)
        // Every kSec item constant of iOS's SecItem.h is there, with Apple's string.
        XCTAssertEqual(kSecMatchCaseInsensitive as String, "m_CaseInsensitive")
        XCTAssertEqual([kSecMatchPolicy, kSecMatchIssuers, kSecMatchItemList, kSecMatchSearchList, kSecMatchTrustedOnly,
                        kSecMatchValidOnDate, kSecMatchSubjectContains, kSecMatchEmailAddressIfPresent,
                        kSecMatchHostOrSubdomainOfHost] as [String],
                       ["m_Policy", "m_Issuers", "m_ItemList", "m_SearchList", "m_TrustedOnly", "m_ValidOnDate",
                        "m_SubjectContains", "m_EmailAddressIfPresent", "m_HostOrSubdomainOfHost"])
        XCTAssertEqual([kSecAttrIssuer, kSecAttrSerialNumber, kSecAttrSubject, kSecAttrSubjectKeyID, kSecAttrPublicKeyHash,
                        kSecAttrCertificateType, kSecAttrCertificateEncoding, kSecAttrSyncViewHint,
                        kSecAttrPersistentReference, kSecAttrAccessGroupToken, kSecUseItemList] as [String],
                       ["issr", "slnr", "subj", "skid", "pkhh", "ctyp", "cenc", "vwht", "persistref", "com.apple.token",
                        "u_ItemList"])
        XCTAssertFalse(KeychainWrapper.message(for: errSecItemNotFound).isEmpty)
    }

    /// Leaves a WhenUnlocked password for LockedDeviceTests, which run after a lock.
    func testKeepAPasswordForTheLockedRun() throws {
        let kept = KeychainWrapper(service: "com.example.fixture.kept")
        try kept.delete(account: "kept")
        try kept.save("kept", account: "kept")
    }
}

/// Run with KEYCHAIN_DEVICE_LOCKED=1 after `dpfs lock --now`: a WhenUnlocked password
/// cannot be read, exactly as on a locked iPhone.
final class LockedDeviceTests: XCTestCase {
    func testWhenUnlockedPasswordIsInteractionNotAllowed() throws {
        try XCTSkipUnless(ProcessInfo.processInfo.environment["KEYCHAIN_DEVICE_LOCKED"] == "1",
                          "needs a locked device (KEYCHAIN_DEVICE_LOCKED=1)")
        let kept = KeychainWrapper(service: "com.example.fixture.kept")
        XCTAssertThrowsError(try kept.load(account: "kept")) {
            XCTAssertEqual($0 as? KeychainError, .unhandled(errSecInteractionNotAllowed))
        }
    }
}
