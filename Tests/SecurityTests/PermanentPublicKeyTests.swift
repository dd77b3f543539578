// SecKeyCreateRandomKey stores a pair's public half as a key item of its own when its
// attributes (kSecPublicKeyAttrs, over the top level's) ask kSecAttrIsPermanent, as
// Apple's SecKeyGeneratePair does, for an ordinary key and a Secure Enclave key alike;
// a public half not asked for is not stored, and its attributes are not read.
import Foundation
import Security
import XCTest

final class PermanentPublicKeyTests: MountedDeviceTestCase {
    private func create(_ parameters: [String: Any]) -> (SecKey?, CFIndex?) {
        var error: Unmanaged<CFError>?
        let key = SecKeyCreateRandomKey(parameters as CFDictionary, &error)
        return (key, error.map { CFErrorGetCode($0.takeRetainedValue()) })
    }

    private func pair(enclave: Bool = false, top: [String: Any] = [:], publicKey: [String: Any]? = nil,
                      privateKey: [String: Any]? = nil) -> [String: Any] {
        var parameters: [String: Any] = [kSecAttrKeyType as String: kSecAttrKeyTypeECSECPrimeRandom,
                                         kSecAttrKeySizeInBits as String: 256]
        if enclave { parameters[kSecAttrTokenID as String] = kSecAttrTokenIDSecureEnclave }
        if let publicKey { parameters[kSecPublicKeyAttrs as String] = publicKey }
        if let privateKey { parameters[kSecPrivateKeyAttrs as String] = privateKey }
        parameters.merge(top) { $1 }
        return parameters
    }

    private func stored(tag: String, keyClass: CFString) -> (OSStatus, Data?) {
        foundData([kSecClass as String: kSecClassKey, kSecAttrApplicationTag as String: Data(tag.utf8),
                   kSecAttrKeyClass as String: keyClass])
    }

    private func publicForm(_ key: SecKey) throws -> Data {
        try XCTUnwrap(SecKeyCopyExternalRepresentation(try XCTUnwrap(SecKeyCopyPublicKey(key)), nil) as Data?)
    }

    func testEachHalfIsStoredUnderItsOwnAttributes() throws {
        for enclave in [false, true] {
            let name = enclave ? "enclave" : "ordinary"
            let (made, code) = create(pair(enclave: enclave,
                                           publicKey: [kSecAttrIsPermanent as String: true,
                                                       kSecAttrApplicationTag as String: Data("\(name).public".utf8),
                                                       kSecAttrLabel as String: "\(name) public half"],
                                           privateKey: [kSecAttrIsPermanent as String: true,
                                                        kSecAttrApplicationTag as String: Data("\(name).private".utf8)]))
            XCTAssertNil(code, name)
            let key = try XCTUnwrap(made, name)
            let (status, data) = stored(tag: "\(name).public", keyClass: kSecAttrKeyClassPublic)
            XCTAssertEqual(status, errSecSuccess, name)
            XCTAssertEqual(data, try publicForm(key), "\(name): the item holds the pair's public key")
            let attributes = try foundAttributes([kSecClass as String: kSecClassKey,
                                                  kSecAttrApplicationTag as String: Data("\(name).public".utf8)])
            XCTAssertEqual(attributes[kSecAttrLabel as String] as? String, "\(name) public half")
            XCTAssertEqual(attributes[kSecAttrKeyClass as String] as? String, kSecAttrKeyClassPublic as String)
            XCTAssertNil(attributes[kSecAttrTokenID as String], "\(name): the public half is an ordinary key")
            var publicRef: CFTypeRef?
            XCTAssertEqual(SecItemCopyMatching([kSecClass as String: kSecClassKey,
                                                kSecAttrApplicationTag as String: Data("\(name).public".utf8),
                                                kSecReturnRef as String: true] as CFDictionary, &publicRef),
                           errSecSuccess, name)
            let publicKey = try XCTUnwrap(publicRef.map { $0 as! SecKey }, name)
            XCTAssertEqual(SecKeyCopyExternalRepresentation(publicKey, nil) as Data?, try publicForm(key),
                           "\(name): found by ref, it exports as the pair's public key")
            XCTAssertEqual(stored(tag: "\(name).public", keyClass: kSecAttrKeyClassPrivate).0, errSecItemNotFound,
                           "\(name): the public tag names the public half only")
            var found: CFTypeRef?
            XCTAssertEqual(SecItemCopyMatching([kSecClass as String: kSecClassKey,
                                                kSecAttrApplicationTag as String: Data("\(name).private".utf8),
                                                kSecAttrKeyClass as String: kSecAttrKeyClassPrivate,
                                                kSecReturnRef as String: true] as CFDictionary, &found),
                           errSecSuccess, "\(name): the private half is stored as before")
        }
    }

    func testAPermanentTopLevelStoresBothHalves() throws {
        let (made, code) = create(pair(top: [kSecAttrIsPermanent as String: true,
                                             kSecAttrApplicationTag as String: Data("both".utf8)]))
        XCTAssertNil(code)
        let key = try XCTUnwrap(made)
        XCTAssertEqual(stored(tag: "both", keyClass: kSecAttrKeyClassPublic).1, try publicForm(key))
        XCTAssertEqual(stored(tag: "both", keyClass: kSecAttrKeyClassPrivate).0, errSecSuccess)
    }

    func testOnlyTheHalvesAskedForAreStored() throws {
        let (made, code) = create(pair(publicKey: [kSecAttrApplicationTag as String: Data("one".utf8),
                                                   kSecAttrLabel as String: 5],
                                       privateKey: [kSecAttrIsPermanent as String: true,
                                                    kSecAttrApplicationTag as String: Data("one".utf8)]))
        XCTAssertNil(code, "a transient public half's attributes are not read")
        XCTAssertNotNil(made)
        XCTAssertEqual(stored(tag: "one", keyClass: kSecAttrKeyClassPublic).0, errSecItemNotFound)
        XCTAssertEqual(stored(tag: "one", keyClass: kSecAttrKeyClassPrivate).0, errSecSuccess)

        let (transient, none) = create(pair(top: [kSecAttrIsPermanent as String: true,
                                                  kSecAttrApplicationTag as String: Data("neither".utf8)],
                                            publicKey: [kSecAttrIsPermanent as String: false],
                                            privateKey: [kSecAttrIsPermanent as String: false]))
        XCTAssertNil(none)
        XCTAssertNotNil(transient)
        XCTAssertEqual(stored(tag: "neither", keyClass: kSecAttrKeyClassPublic).0, errSecItemNotFound,
                       "the half's own kSecAttrIsPermanent overrides the top level's")
        XCTAssertEqual(stored(tag: "neither", keyClass: kSecAttrKeyClassPrivate).0, errSecItemNotFound)
    }

    func testABadPermanentPublicHalfFailsTheCallBeforeAnOrdinaryPrivateKeyIsStored() throws {
        let (made, code) = create(pair(publicKey: [kSecAttrIsPermanent as String: true, kSecAttrLabel as String: 5],
                                       privateKey: [kSecAttrIsPermanent as String: true,
                                                    kSecAttrApplicationTag as String: Data("bad".utf8)]))
        XCTAssertNil(made)
        XCTAssertEqual(code, CFIndex(errSecParam))
        XCTAssertEqual(stored(tag: "bad", keyClass: kSecAttrKeyClassPrivate).0, errSecItemNotFound)
    }
}
