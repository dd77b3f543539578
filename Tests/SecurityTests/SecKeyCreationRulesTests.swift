// SecKeyCreateRandomKey refuses what Apple's refuses: an access control beside a
// different kSecAttrAccessible, and a synchronizable key that cannot be; an ordinary
// permanent key asked synchronizable is stored so.
import Foundation
import Security
import XCTest

final class SecKeyCreationRulesTests: MountedDeviceTestCase {
    private func parameters(tag: String, enclave: Bool = false, top: [String: Any] = [:],
                            privateKey: [String: Any]) -> [String: Any] {
        var privateAttributes: [String: Any] = [kSecAttrIsPermanent as String: true,
                                                kSecAttrApplicationTag as String: Data(tag.utf8)]
        privateAttributes.merge(privateKey) { $1 }
        var parameters: [String: Any] = [kSecAttrKeyType as String: kSecAttrKeyTypeECSECPrimeRandom,
                                         kSecAttrKeySizeInBits as String: 256,
                                         kSecPrivateKeyAttrs as String: privateAttributes]
        if enclave { parameters[kSecAttrTokenID as String] = kSecAttrTokenIDSecureEnclave }
        parameters.merge(top) { $1 }
        return parameters
    }

    private func create(_ parameters: [String: Any]) -> (SecKey?, CFIndex?) {
        var error: Unmanaged<CFError>?
        let key = SecKeyCreateRandomKey(parameters as CFDictionary, &error)
        return (key, error.map { CFErrorGetCode($0.takeRetainedValue()) })
    }

    private func find(tag: String, synchronizable: Bool) -> (OSStatus, CFTypeRef?) {
        let query: [String: Any] = [kSecClass as String: kSecClassKey, kSecAttrApplicationTag as String: Data(tag.utf8),
                                    kSecAttrSynchronizable as String: synchronizable, kSecReturnRef as String: true]
        var result: CFTypeRef?
        let status = SecItemCopyMatching(query as CFDictionary, &result)
        return (status, result)
    }

    func testAnAccessControlBesideADifferentAccessibilityIsRefused() throws {
        let access = try XCTUnwrap(SecAccessControlCreateWithFlags(nil, kSecAttrAccessibleWhenUnlockedThisDeviceOnly,
                                                                   .privateKeyUsage, nil))
        let control: [String: Any] = [kSecAttrAccessControl as String: access]
        let always: [String: Any] = [kSecAttrAccessible as String: kSecAttrAccessibleAlways]
        for parameters in [self.parameters(tag: "both", enclave: true, privateKey: control.merging(always) { $1 }),
                           self.parameters(tag: "both", enclave: true, top: always, privateKey: control)] {
            let (key, code) = create(parameters)
            XCTAssertNil(key)
            XCTAssertEqual(code, CFIndex(errSecParam))
            XCTAssertEqual(find(tag: "both", synchronizable: false).0, errSecItemNotFound)
        }
        let same: [String: Any] = [kSecAttrAccessible as String: kSecAttrAccessibleWhenUnlockedThisDeviceOnly]
        let (key, _) = create(parameters(tag: "same", enclave: true, privateKey: control.merging(same) { $1 }))
        let attributes: [String: Any] = try XCTUnwrap(SecKeyCopyAttributes(try XCTUnwrap(key)))
        XCTAssertEqual(attributes[kSecAttrAccessible as String] as? String, kSecAttrAccessibleWhenUnlockedThisDeviceOnly)
    }

    func testASynchronizableKeyIsStoredSynchronizable() throws {
        let sync: [String: Any] = [kSecAttrSynchronizable as String: true]
        let (key, code) = create(parameters(tag: "synced", privateKey: sync))
        XCTAssertNil(code)
        let (status, found) = find(tag: "synced", synchronizable: true)
        XCTAssertEqual(status, errSecSuccess)
        let foundKey = try XCTUnwrap(found as? SecKey)
        XCTAssertEqual(SecKeyCopyExternalRepresentation(foundKey, nil) as Data?,
                       SecKeyCopyExternalRepresentation(try XCTUnwrap(key), nil) as Data?)
        XCTAssertEqual(find(tag: "synced", synchronizable: false).0, errSecItemNotFound)

        XCTAssertEqual(create(parameters(tag: "enclave", enclave: true, privateKey: sync)).1, CFIndex(errSecParam))
        let access = try XCTUnwrap(SecAccessControlCreateWithFlags(nil, kSecAttrAccessibleWhenUnlocked, .userPresence, nil))
        let controlled = sync.merging([kSecAttrAccessControl as String: access]) { $1 }
        XCTAssertEqual(create(parameters(tag: "controlled", privateKey: controlled)).1, CFIndex(errSecParam))
        XCTAssertEqual(find(tag: "controlled", synchronizable: false).0, errSecItemNotFound)
    }
}
