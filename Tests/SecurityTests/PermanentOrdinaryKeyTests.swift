// A permanent ordinary key from SecKeyCreateRandomKey, made in the app and stored as a
// key item: found again by tag as a SecKey that signs, in every accessibility, and
// refused with the statuses iOS gives (locked, foreign group, access control beside
// synchronizable, .biometryCurrentSet with nothing enrolled), leaving nothing behind.
import Foundation
import Security
import XCTest

final class PermanentOrdinaryKeyTests: MountedDeviceTestCase {
    private func create(tag: String, _ privateAttributes: [String: Any]) -> (SecKey?, CFIndex?) {
        var attributes: [String: Any] = [kSecAttrIsPermanent as String: true,
                                         kSecAttrApplicationTag as String: Data(tag.utf8)]
        attributes.merge(privateAttributes) { $1 }
        let parameters: [String: Any] = [kSecAttrKeyType as String: kSecAttrKeyTypeECSECPrimeRandom,
                                         kSecAttrKeySizeInBits as String: 256,
                                         kSecPrivateKeyAttrs as String: attributes]
        var error: Unmanaged<CFError>?
        let key = SecKeyCreateRandomKey(parameters as CFDictionary, &error)
        return (key, error.map { CFErrorGetCode($0.takeRetainedValue()) })
    }

    private func find(tag: String) -> (OSStatus, SecKey?) {
        let query: [String: Any] = [kSecClass as String: kSecClassKey, kSecAttrApplicationTag as String: Data(tag.utf8),
                                    kSecReturnRef as String: true]
        var result: CFTypeRef?
        let status = SecItemCopyMatching(query as CFDictionary, &result)
        return (status, result.map { $0 as! SecKey })
    }

    func testAPermanentKeyIsFoundByTagAndSignsInEachAccessibility() throws {
        let accessibilities = [kSecAttrAccessibleWhenUnlocked, kSecAttrAccessibleAfterFirstUnlock,
                               kSecAttrAccessibleAlways, kSecAttrAccessibleWhenPasscodeSetThisDeviceOnly,
                               kSecAttrAccessibleWhenUnlockedThisDeviceOnly,
                               kSecAttrAccessibleAfterFirstUnlockThisDeviceOnly, kSecAttrAccessibleAlwaysThisDeviceOnly]
        for accessible in accessibilities {
            let tag = "ordinary.\(accessible)"
            let (made, code) = create(tag: tag, [kSecAttrAccessible as String: accessible, kSecAttrLabel as String: tag])
            XCTAssertNil(code, "\(accessible)")
            let key = try XCTUnwrap(made)
            let attributes: [String: Any] = try XCTUnwrap(SecKeyCopyAttributes(key))
            XCTAssertEqual(attributes[kSecAttrAccessible as String] as? String, accessible as String)
            XCTAssertEqual(attributes[kSecAttrLabel as String] as? String, tag)
            XCTAssertEqual(attributes[kSecAttrKeyClass as String] as? String, kSecAttrKeyClassPrivate as String,
                           "the stored item's attributes are the key's")

            let (status, found) = find(tag: tag)
            XCTAssertEqual(status, errSecSuccess, "\(accessible)")
            let again = try XCTUnwrap(found)
            XCTAssertEqual(SecKeyCopyExternalRepresentation(again, nil) as Data?,
                           SecKeyCopyExternalRepresentation(key, nil) as Data?)
            let message = Data("signed by \(tag)".utf8)
            var error: Unmanaged<CFError>?
            let signature = try XCTUnwrap(SecKeyCreateSignature(again, .ecdsaSignatureMessageX962SHA256,
                                                                message as CFData, &error))
            XCTAssertNil(error?.takeRetainedValue())
            let publicKey = try XCTUnwrap(SecKeyCopyPublicKey(key))
            XCTAssertTrue(SecKeyVerifySignature(publicKey, .ecdsaSignatureMessageX962SHA256, message as CFData,
                                                signature, nil))
        }
    }

    func testRefusalsLeaveNoKey() throws {
        try device.lockNow()
        XCTAssertEqual(create(tag: "locked", [kSecAttrAccessible as String: kSecAttrAccessibleWhenUnlocked]).1,
                       CFIndex(errSecInteractionNotAllowed))
        try device.unlock()
        XCTAssertEqual(find(tag: "locked").0, errSecItemNotFound)

        XCTAssertEqual(create(tag: "foreign", [kSecAttrAccessGroup as String: "TEAM9.com.example.foreign"]).1,
                       CFIndex(errSecMissingEntitlement))
        XCTAssertEqual(find(tag: "foreign").0, errSecItemNotFound)

        let presence = try XCTUnwrap(SecAccessControlCreateWithFlags(nil, kSecAttrAccessibleWhenUnlocked,
                                                                     .userPresence, nil))
        XCTAssertEqual(create(tag: "synced", [kSecAttrAccessControl as String: presence,
                                              kSecAttrSynchronizable as String: true]).1, CFIndex(errSecParam))
        XCTAssertEqual(find(tag: "synced").0, errSecItemNotFound)

        let currentSet = try XCTUnwrap(SecAccessControlCreateWithFlags(nil, kSecAttrAccessibleWhenUnlocked,
                                                                       [.privateKeyUsage, .biometryCurrentSet], nil))
        XCTAssertEqual(create(tag: "enrolled", [kSecAttrAccessControl as String: currentSet]).1,
                       CFIndex(errSecAuthFailed), "nothing is enrolled to bind the key to")
        XCTAssertEqual(find(tag: "enrolled").0, errSecItemNotFound)
    }
}
