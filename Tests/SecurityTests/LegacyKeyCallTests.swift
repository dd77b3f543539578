// The SecKey calls of before iOS 10 that older key libraries make (SecKeyGeneratePair,
// SecKeyRawSign, SecKeyRawVerify, SecKeyEncrypt, SecKeyDecrypt), and a public key
// stored by kSecValueRef beside its private key, as such libraries store a pair.
import Foundation
import Security
import XCTest

final class LegacyKeyCallTests: MountedDeviceTestCase {
    private func generatePair(tag: String) throws -> (public: SecKey, private: SecKey) {
        let parameters: [String: Any] = [kSecAttrKeyType as String: kSecAttrKeyTypeECSECPrimeRandom,
                                         kSecAttrKeySizeInBits as String: 256,
                                         kSecPrivateKeyAttrs as String: [kSecAttrIsPermanent as String: true,
                                                                         kSecAttrApplicationTag as String: Data(tag.utf8)]]
        var publicKey, privateKey: SecKey?
        XCTAssertEqual(SecKeyGeneratePair(parameters as CFDictionary, &publicKey, &privateKey), errSecSuccess)
        return (try XCTUnwrap(publicKey), try XCTUnwrap(privateKey))
    }

    private func digest(_ text: String) -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: 32)
        for (index, byte) in text.utf8.enumerated() { bytes[index % 32] ^= byte }
        return bytes
    }

    func testGeneratePairStoresThePrivateKeyAndGivesBoth() throws {
        let pair = try generatePair(tag: "legacy.pair")
        XCTAssertEqual(SecKeyCopyExternalRepresentation(pair.public, nil) as Data?,
                       SecKeyCopyExternalRepresentation(try XCTUnwrap(SecKeyCopyPublicKey(pair.private)), nil) as Data?)
        let query: [String: Any] = [kSecClass as String: kSecClassKey, kSecAttrApplicationTag as String: Data("legacy.pair".utf8),
                                    kSecAttrKeyClass as String: kSecAttrKeyClassPrivate, kSecReturnRef as String: true]
        var found: CFTypeRef?
        XCTAssertEqual(SecItemCopyMatching(query as CFDictionary, &found), errSecSuccess)

        let refused: [String: Any] = [kSecAttrKeyType as String: kSecAttrKeyTypeECSECPrimeRandom,
                                      kSecAttrKeySizeInBits as String: 384]
        var publicKey, privateKey: SecKey?
        XCTAssertNotEqual(SecKeyGeneratePair(refused as CFDictionary, &publicKey, &privateKey), errSecSuccess)
        XCTAssertNil(privateKey)
    }

    func testRawSignAndVerifyAreX962OverTheDigest() throws {
        let pair = try generatePair(tag: "legacy.sign")
        var digest = digest("a message")
        var signature = [UInt8](repeating: 0, count: 128)
        var length = signature.count
        XCTAssertEqual(SecKeyRawSign(pair.private, .PKCS1, &digest, digest.count, &signature, &length), errSecSuccess)
        XCTAssertLessThan(length, 128)
        let signed = Data(signature.prefix(length))
        XCTAssertTrue(SecKeyVerifySignature(pair.public, .ecdsaSignatureDigestX962SHA256, Data(digest) as CFData,
                                            signed as CFData, nil), "the newer call verifies it")
        XCTAssertEqual(SecKeyRawVerify(pair.public, .PKCS1, &digest, digest.count, &signature, length), errSecSuccess)
        var other = self.digest("another message")
        XCTAssertEqual(SecKeyRawVerify(pair.public, .PKCS1, &other, other.count, &signature, length), errSSLCrypto,
                       "a signature of another digest")

        var raw = [UInt8](repeating: 0, count: 64)
        var rawLength = raw.count
        XCTAssertEqual(SecKeyRawSign(pair.private, .sigRaw, &digest, digest.count, &raw, &rawLength), errSecSuccess)
        XCTAssertEqual(rawLength, 64, "r || s")
        XCTAssertEqual(SecKeyRawVerify(pair.public, .sigRaw, &digest, digest.count, &raw, rawLength), errSecSuccess)

        var small = [UInt8](repeating: 0, count: 8)
        var smallLength = small.count
        XCTAssertEqual(SecKeyRawSign(pair.private, .PKCS1, &digest, digest.count, &small, &smallLength), errSecParam)
        XCTAssertEqual(smallLength, 8, "the length is left as it was")
        XCTAssertNotEqual(SecKeyRawSign(pair.public, .PKCS1, &digest, digest.count, &signature, &length), errSecSuccess,
                          "a public key cannot sign")
    }

    func testEncryptionWithAPaddingIsRefusedForAnECKey() throws {
        let pair = try generatePair(tag: "legacy.encrypt")
        var plain = [UInt8](repeating: 7, count: 16)
        var output = [UInt8](repeating: 0, count: 256)
        var length = output.count
        XCTAssertEqual(SecKeyEncrypt(pair.public, .PKCS1, &plain, plain.count, &output, &length), errSecParam)
        XCTAssertEqual(SecKeyDecrypt(pair.private, .OAEP, &output, 64, &plain, &length), errSecParam)
    }

    func testAPublicKeyIsStoredByRefBesideItsPrivateKey() throws {
        let pair = try generatePair(tag: "legacy.public")
        let add: [String: Any] = [kSecClass as String: kSecClassKey, kSecAttrLabel as String: "public half",
                                  kSecValueRef as String: pair.public]
        let wrongClass: [String: Any] = [kSecClass as String: kSecClassKey, kSecValueRef as String: pair.private,
                                         kSecAttrKeyClass as String: kSecAttrKeyClassPublic]
        XCTAssertEqual(SecItemCopyMatching(wrongClass as CFDictionary, nil), errSecItemNotFound,
                       "a ref with another class given finds nothing while only the private item is stored")
        XCTAssertEqual(SecItemAdd(add as CFDictionary, nil), errSecSuccess)
        XCTAssertEqual(SecItemAdd(add as CFDictionary, nil), errSecDuplicateItem)

        let byLabel: [String: Any] = [kSecClass as String: kSecClassKey, kSecAttrLabel as String: "public half",
                                      kSecAttrKeyClass as String: kSecAttrKeyClassPublic, kSecReturnRef as String: true]
        var found: CFTypeRef?
        XCTAssertEqual(SecItemCopyMatching(byLabel as CFDictionary, &found), errSecSuccess)
        let stored = try XCTUnwrap(found.map { $0 as! SecKey })
        XCTAssertEqual(SecKeyCopyExternalRepresentation(stored, nil) as Data?,
                       SecKeyCopyExternalRepresentation(pair.public, nil) as Data?)

        var mislabelled = add
        mislabelled[kSecAttrKeyClass as String] = kSecAttrKeyClassPrivate
        XCTAssertEqual(SecItemAdd(mislabelled as CFDictionary, nil), errSecParam, "a public key added as private")
        let byRef: [String: Any] = [kSecClass as String: kSecClassKey, kSecValueRef as String: pair.public]
        XCTAssertEqual(SecItemDelete(byRef as CFDictionary), errSecSuccess)
        XCTAssertEqual(SecItemCopyMatching(byLabel as CFDictionary, &found), errSecItemNotFound)
        let privateItem: [String: Any] = [kSecClass as String: kSecClassKey, kSecAttrApplicationTag as String: Data("legacy.public".utf8),
                                          kSecReturnRef as String: true]
        XCTAssertEqual(SecItemCopyMatching(privateItem as CFDictionary, &found), errSecSuccess,
                       "deleting the public key's item leaves the private key's")
    }
}
