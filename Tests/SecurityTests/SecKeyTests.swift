// SecKey against a mounted device: P-256 keys made, found again by tag, used and
// deleted as on iOS; Secure Enclave keys that never export their private key and
// refuse to sign while their class is locked; Apple's ECIES format checked against a
// ciphertext made by SecKeyCreateEncryptedData on Apple's platform.
import Foundation
import Security
import XCTest

final class SecKeyTests: MountedDeviceTestCase {
    private func makeKey(tag: String, enclave: Bool, permanent: Bool = true,
                         accessible: CFString = kSecAttrAccessibleWhenUnlockedThisDeviceOnly) throws -> SecKey {
        var attributes: [String: Any] = [
            kSecAttrKeyType as String: kSecAttrKeyTypeECSECPrimeRandom,
            kSecAttrKeySizeInBits as String: 256,
            kSecPrivateKeyAttrs as String: [
                kSecAttrIsPermanent as String: permanent,
                kSecAttrApplicationTag as String: Data(tag.utf8),
                kSecAttrLabel as String: "label of \(tag)",
                kSecAttrAccessible as String: accessible,
            ] as [String: Any],
        ]
        if enclave { attributes[kSecAttrTokenID as String] = kSecAttrTokenIDSecureEnclave }
        var error: Unmanaged<CFError>?
        guard let key = SecKeyCreateRandomKey(attributes as CFDictionary, &error) else {
            throw error!.takeRetainedValue() as Error
        }
        return key
    }

    private func find(tag: String) -> (OSStatus, SecKey?) {
        let query: [String: Any] = [
            kSecClass as String: kSecClassKey, kSecAttrApplicationTag as String: Data(tag.utf8),
            kSecAttrKeyType as String: kSecAttrKeyTypeECSECPrimeRandom, kSecReturnRef as String: true,
        ]
        var result: CFTypeRef?
        let status = SecItemCopyMatching(query as CFDictionary, &result)
        return (status, result.map { $0 as! SecKey })
    }

    private func sign(_ key: SecKey, _ message: Data) -> (Data?, Int?) {
        var error: Unmanaged<CFError>?
        let signature = SecKeyCreateSignature(key, .ecdsaSignatureMessageX962SHA256, message as CFData, &error)
        return (signature as Data?, error.map { CFErrorGetCode($0.takeRetainedValue()) })
    }

    private func verify(_ key: SecKey, _ message: Data, _ signature: Data) -> Bool {
        guard let publicKey = SecKeyCopyPublicKey(key) else { return false }
        var error: Unmanaged<CFError>?
        let ok = SecKeyVerifySignature(publicKey, .ecdsaSignatureMessageX962SHA256, message as CFData,
                                       signature as CFData, &error)
        _ = error?.takeRetainedValue()
        return ok
    }

    func testSecureEnclaveKeyCreateFindSignVerifyDelete() throws {
        let key = try makeKey(tag: "com.example.signing", enclave: true)
        let challenge = Data("challenge 42".utf8)
        let (signature, failure) = sign(key, challenge)
        XCTAssertNil(failure)
        let der = try XCTUnwrap(signature)
        XCTAssertEqual(der.first, 0x30, "an X9.62 DER SEQUENCE, as Apple's")
        XCTAssertTrue(verify(key, challenge, der))
        XCTAssertFalse(verify(key, Data("another challenge".utf8), der))

        let (status, found) = find(tag: "com.example.signing")
        XCTAssertEqual(status, errSecSuccess)
        let again = try XCTUnwrap(found)
        XCTAssertEqual(SecKeyCopyExternalRepresentation(SecKeyCopyPublicKey(again)!, nil) as Data?,
                       SecKeyCopyExternalRepresentation(SecKeyCopyPublicKey(key)!, nil) as Data?)
        let (foundSignature, foundFailure) = sign(again, challenge)
        XCTAssertNil(foundFailure)
        XCTAssertTrue(verify(key, challenge, try XCTUnwrap(foundSignature)), "the key found by tag is the same key")
        let attributes: [String: Any] = try XCTUnwrap(SecKeyCopyAttributes(again))
        XCTAssertEqual(attributes[kSecAttrTokenID as String] as? String, kSecAttrTokenIDSecureEnclave)
        XCTAssertEqual(attributes[kSecAttrApplicationTag as String] as? Data, Data("com.example.signing".utf8))
        XCTAssertEqual(attributes[kSecAttrKeyClass as String] as? String, kSecAttrKeyClassPrivate)
        XCTAssertEqual(attributes[kSecAttrLabel as String] as? String, "label of com.example.signing")

        let tagQuery: [String: Any] = [kSecClass as String: kSecClassKey,
                                       kSecAttrApplicationTag as String: Data("com.example.signing".utf8)]
        XCTAssertEqual(SecItemDelete(tagQuery as CFDictionary), errSecSuccess)
        XCTAssertEqual(find(tag: "com.example.signing").0, errSecItemNotFound)
        XCTAssertEqual(SecItemDelete(tagQuery as CFDictionary), errSecItemNotFound)
    }

    func testSecureEnclavePrivateKeyIsNotExportable() throws {
        let key = try makeKey(tag: "se.export", enclave: true)
        var error: Unmanaged<CFError>?
        XCTAssertNil(SecKeyCopyExternalRepresentation(key, &error), "an SE private key never leaves the device")
        XCTAssertNotNil(error?.takeRetainedValue())
        let publicData = try XCTUnwrap(SecKeyCopyExternalRepresentation(SecKeyCopyPublicKey(key)!, nil) as Data?)
        XCTAssertEqual(publicData.count, 65)
        XCTAssertEqual(publicData.first, 4)

        // What a find returns as the item's data is the daemon's opaque token, no key.
        var result: CFTypeRef?
        let query: [String: Any] = [kSecClass as String: kSecClassKey, kSecAttrApplicationTag as String: Data("se.export".utf8),
                                    kSecReturnData as String: true]
        XCTAssertEqual(SecItemCopyMatching(query as CFDictionary, &result), errSecSuccess)
        let data = try XCTUnwrap(result as? Data)
        XCTAssertNotEqual(data.count, 97)
        XCTAssertNil(SecKeyCreateWithData(data as CFData, [kSecAttrKeyType as String: kSecAttrKeyTypeECSECPrimeRandom,
                                                           kSecAttrKeyClass as String: kSecAttrKeyClassPrivate] as CFDictionary, nil))
        let replace: [String: Any] = [kSecValueData as String: Data(repeating: 1, count: 97)]
        XCTAssertEqual(SecItemUpdate(query.filter { $0.key != kSecReturnData as String } as CFDictionary,
                                     replace as CFDictionary), errSecParam, "an SE key's data is not the app's to replace")
        XCTAssertNil(sign(key, Data("still signs".utf8)).1)
        // Nor may an app pose as the enclave by adding a key item with its token.
        let forged: [String: Any] = [kSecClass as String: kSecClassKey, kSecAttrTokenID as String: kSecAttrTokenIDSecureEnclave,
                                     kSecValueData as String: publicData]
        XCTAssertNotEqual(SecItemAdd(forged as CFDictionary, nil), errSecSuccess)
    }

    func testLockedDeviceRefusesWhenUnlockedKey() throws {
        let key = try makeKey(tag: "se.locked", enclave: true)
        let message = Data("while locked".utf8)
        XCTAssertNil(sign(key, message).1)
        try device.lockNow()
        let (signature, failure) = sign(key, message)
        XCTAssertNil(signature)
        XCTAssertEqual(failure, Int(errSecInteractionNotAllowed), "a WhenUnlocked key cannot sign while locked")
        XCTAssertEqual(find(tag: "se.locked").0, errSecInteractionNotAllowed)
        try device.unlock()
        XCTAssertNil(sign(key, message).1, "and signs again after unlock")

        let always = try makeKey(tag: "se.always", enclave: true, accessible: kSecAttrAccessibleAlwaysThisDeviceOnly)
        try device.lockNow()
        XCTAssertNil(sign(always, message).1, "an AlwaysThisDeviceOnly key signs while locked")
    }

    func testAWhenPasscodeSetKeyDiesWithThePasscode() throws {
        let message = Data("after the passcode".utf8)
        let held = try makeKey(tag: "se.pin", enclave: true, permanent: false,
                               accessible: kSecAttrAccessibleWhenPasscodeSetThisDeviceOnly)
        let stored = try makeKey(tag: "se.pin.stored", enclave: true,
                                 accessible: kSecAttrAccessibleWhenPasscodeSetThisDeviceOnly)
        XCTAssertNil(sign(held, message).1)
        try device.dpfs("passcode", "remove", device.mountpoint, "--passcode-file", device.passcodeFile)
        XCTAssertEqual(find(tag: "se.pin.stored").0, errSecItemNotFound)
        for key in [held, stored] {
            let (signature, failure) = sign(key, message)
            XCTAssertNil(signature, "a ref held across the removal signs no more")
            XCTAssertEqual(failure, Int(errSecItemNotFound))
        }
        for permanent in [false, true] {
            XCTAssertThrowsError(try makeKey(tag: "se.pin.new", enclave: true, permanent: permanent,
                                             accessible: kSecAttrAccessibleWhenPasscodeSetThisDeviceOnly)) { error in
                XCTAssertEqual((error as NSError).code, Int(errSecNotAvailable))
            }
        }
    }

    func testAnEnclaveKeySignsAMessageLargerThanAFrame() throws {
        // The message is hashed here, as iOS does in the caller's process; only the
        // digest goes to the daemon.
        let key = try makeKey(tag: "se.large", enclave: true, permanent: false)
        let message = Data(repeating: 0x5a, count: 17 << 20)
        let (signature, failure) = sign(key, message)
        XCTAssertNil(failure)
        XCTAssertTrue(verify(key, message, try XCTUnwrap(signature)))

        // A ciphertext goes to the daemon whole: one over the frame's limit is refused
        // as too large, not taken for a device that is gone.
        let algorithm = SecKeyAlgorithm.eciesEncryptionStandardVariableIVX963SHA256AESGCM
        let ciphertext = try XCTUnwrap(SecKeyCreateEncryptedData(try XCTUnwrap(SecKeyCopyPublicKey(key)), algorithm,
                                                                 message as CFData, nil))
        var error: Unmanaged<CFError>?
        XCTAssertNil(SecKeyCreateDecryptedData(key, algorithm, ciphertext, &error))
        XCTAssertEqual(error.map { CFErrorGetCode($0.takeRetainedValue()) }, Int(errSecParam))
    }

    func testKeyExchangeWithTheX963KDF() throws {
        let enclave = try makeKey(tag: "se.ecdh", enclave: true, permanent: false)
        let ordinary = try makeKey(tag: "ecdh", enclave: false, permanent: false)
        let enclavePublic = try XCTUnwrap(SecKeyCopyPublicKey(enclave)), ordinaryPublic = try XCTUnwrap(SecKeyCopyPublicKey(ordinary))
        let parameters: [String: Any] = [SecKeyKeyExchangeParameter.requestedSize.rawValue: 42,
                                         kSecKeyKeyExchangeParameterSharedInfo as String: Data("context".utf8)]
        var results: [Data] = []
        for algorithm in [SecKeyAlgorithm.ecdhKeyExchangeStandardX963SHA256, .ecdhKeyExchangeCofactorX963SHA256,
                          .ecdhKeyExchangeStandardX963SHA1, .ecdhKeyExchangeCofactorX963SHA384,
                          .ecdhKeyExchangeStandardX963SHA512] {
            XCTAssertTrue(SecKeyIsAlgorithmSupported(enclave, .keyExchange, algorithm))
            var error: Unmanaged<CFError>?
            let mine = SecKeyCopyKeyExchangeResult(enclave, algorithm, ordinaryPublic, parameters as CFDictionary, &error)
            XCTAssertNil(error?.takeRetainedValue())
            let theirs = SecKeyCopyKeyExchangeResult(ordinary, algorithm, enclavePublic, parameters as CFDictionary, nil)
            XCTAssertEqual(mine?.count, 42, "\(algorithm.rawValue)")
            XCTAssertEqual(mine, theirs, "both sides derive the same key")
            results.append(try XCTUnwrap(mine))
        }
        XCTAssertEqual(results[0], results[1], "on P-256 the cofactor is 1")
        XCTAssertEqual(Set(results.dropFirst()).count, 4, "each hash its own key")
        let raw = SecKeyCopyKeyExchangeResult(enclave, .ecdhKeyExchangeStandard, ordinaryPublic, [:], nil)
        XCTAssertEqual(raw?.count, 32)

        var error: Unmanaged<CFError>?
        XCTAssertNil(SecKeyCopyKeyExchangeResult(enclave, .ecdhKeyExchangeStandardX963SHA256, ordinaryPublic, [:], &error))
        XCTAssertEqual(error.map { CFErrorGetCode($0.takeRetainedValue()) }, Int(errSecParam), "the size is required")
        XCTAssertFalse(SecKeyIsAlgorithmSupported(enclave, .keyExchange, .ecdhKeyExchangeStandardX963SHA224))
        XCTAssertNil(SecKeyCopyKeyExchangeResult(ordinary, .ecdhKeyExchangeCofactorX963SHA224, enclavePublic,
                                                 parameters as CFDictionary, &error))
        XCTAssertEqual(error.map { CFErrorGetCode($0.takeRetainedValue()) }, Int(errSecUnimplemented))
    }

    func testAnEnclaveKeySignsWithEveryHashAndForm() throws {
        let key = try makeKey(tag: "se.hashes", enclave: true, permanent: false)
        let publicKey = try XCTUnwrap(SecKeyCopyPublicKey(key))
        let message = Data("every hash".utf8)
        for (algorithm, input) in [(SecKeyAlgorithm.ecdsaSignatureMessageX962SHA384, message),
                                   (.ecdsaSignatureMessageX962SHA512, message), (.ecdsaSignatureMessageX962SHA1, message),
                                   (.ecdsaSignatureMessageRFC4754SHA256, message),
                                   (.ecdsaSignatureDigestX962SHA224, Data(repeating: 3, count: 28)),
                                   (.ecdsaSignatureDigestRFC4754SHA384, Data(repeating: 4, count: 48))] {
            var error: Unmanaged<CFError>?
            let signature = SecKeyCreateSignature(key, algorithm, input as CFData, &error)
            XCTAssertNil(error?.takeRetainedValue(), "\(algorithm.rawValue)")
            XCTAssertTrue(SecKeyVerifySignature(publicKey, algorithm, input as CFData, try XCTUnwrap(signature), nil))
            if algorithm.rawValue.contains("RFC4754") { XCTAssertEqual(signature?.count, 64) }
        }
        XCTAssertFalse(SecKeyIsAlgorithmSupported(key, .sign, .ecdsaSignatureMessageX962SHA224))
    }

    func testRSAAlgorithmsAreNamedButUnimplemented() throws {
        let key = try makeKey(tag: "rsa.names", enclave: false, permanent: false)
        XCTAssertEqual(SecKeyAlgorithm.rsaSignatureMessagePSSSHA256.rawValue, "algid:sign:RSA:message-PSS:SHA256:SHA256:32")
        XCTAssertEqual(kSecKeyAlgorithmRSAEncryptionOAEPSHA256AESGCM.rawValue, "algid:encrypt:RSA:OAEP:SHA256:AESGCM")
        XCTAssertEqual(kSecKeyKeyExchangeParameterRequestedSize, "requestedSize")
        XCTAssertEqual(SecKeyKeyExchangeParameter.sharedInfo.rawValue, "sharedInfo")
        for algorithm in [SecKeyAlgorithm.rsaSignatureMessagePKCS1v15SHA256, .rsaSignatureDigestPSSSHA512, .rsaSignatureRaw] {
            XCTAssertFalse(SecKeyIsAlgorithmSupported(key, .sign, algorithm))
            var error: Unmanaged<CFError>?
            XCTAssertNil(SecKeyCreateSignature(key, algorithm, Data(count: 32) as CFData, &error))
            XCTAssertEqual(error.map { CFErrorGetCode($0.takeRetainedValue()) }, Int(errSecUnimplemented))
        }
        for algorithm in [SecKeyAlgorithm.rsaEncryptionOAEPSHA256, .rsaEncryptionPKCS1, .rsaEncryptionRaw] {
            XCTAssertFalse(SecKeyIsAlgorithmSupported(try XCTUnwrap(SecKeyCopyPublicKey(key)), .encrypt, algorithm))
        }
    }

    func testEncryptDecryptWithSecureEnclaveAndOrdinaryKeys() throws {
        for enclave in [true, false] {
            let key = try makeKey(tag: "enc.\(enclave)", enclave: enclave)
            let publicKey = try XCTUnwrap(SecKeyCopyPublicKey(key))
            for algorithm in [SecKeyAlgorithm.eciesEncryptionCofactorVariableIVX963SHA256AESGCM,
                              .eciesEncryptionStandardX963SHA256AESGCM] {
                XCTAssertTrue(SecKeyIsAlgorithmSupported(publicKey, .encrypt, algorithm))
                XCTAssertTrue(SecKeyIsAlgorithmSupported(key, .decrypt, algorithm))
                let plaintext = Data("a secret for \(enclave)".utf8)
                let ciphertext = try XCTUnwrap(SecKeyCreateEncryptedData(publicKey, algorithm, plaintext as CFData, nil) as Data?)
                XCTAssertEqual(ciphertext.count, 65 + plaintext.count + 16, "ephemeral key || ciphertext || tag")
                var error: Unmanaged<CFError>?
                XCTAssertEqual(SecKeyCreateDecryptedData(key, algorithm, ciphertext as CFData, &error) as Data?, plaintext)
                var tampered = ciphertext
                tampered[tampered.count - 1] ^= 1
                XCTAssertNil(SecKeyCreateDecryptedData(key, algorithm, tampered as CFData, &error))
                XCTAssertNotNil(error?.takeRetainedValue())
            }
            XCTAssertFalse(SecKeyIsAlgorithmSupported(publicKey, .sign, .ecdsaSignatureMessageX962SHA256))
        }
    }

    func testOrdinaryKeyExportsAsAppleDoesAndRoundTrips() throws {
        let key = try makeKey(tag: "plain", enclave: false)
        let exported = try XCTUnwrap(SecKeyCopyExternalRepresentation(key, nil) as Data?)
        XCTAssertEqual(exported.count, 97, "04 || X || Y || D")
        let publicData = try XCTUnwrap(SecKeyCopyExternalRepresentation(SecKeyCopyPublicKey(key)!, nil) as Data?)
        XCTAssertEqual(exported.prefix(65), publicData)
        let imported = try XCTUnwrap(SecKeyCreateWithData(exported as CFData, [
            kSecAttrKeyType as String: kSecAttrKeyTypeECSECPrimeRandom,
            kSecAttrKeyClass as String: kSecAttrKeyClassPrivate,
        ] as CFDictionary, nil))
        let digest = Data(repeating: 7, count: 32)
        var error: Unmanaged<CFError>?
        let signature = try XCTUnwrap(SecKeyCreateSignature(imported, .ecdsaSignatureDigestX962SHA256, digest as CFData, &error) as Data?)
        XCTAssertTrue(SecKeyVerifySignature(SecKeyCopyPublicKey(key)!, .ecdsaSignatureDigestX962SHA256, digest as CFData,
                                            signature as CFData, &error))
        XCTAssertEqual(find(tag: "plain").0, errSecSuccess)
        let (_, found) = find(tag: "plain")
        XCTAssertEqual(SecKeyCopyExternalRepresentation(try XCTUnwrap(found), nil) as Data?, exported)

        // A key that is not permanent is no item.
        _ = try makeKey(tag: "ephemeral", enclave: false, permanent: false)
        XCTAssertEqual(find(tag: "ephemeral").0, errSecItemNotFound)
    }

    /// A ciphertext made by SecKeyCreateEncryptedData on Apple's platform with
    /// .eciesEncryptionCofactorVariableIVX963SHA256AESGCM for a P-256 key, published as
    /// a test vector of a Go port of Apple's ECIES (plaintext "P256-SHA256-VIV").
    func testAppleECIESCiphertextDecrypts() throws {
        let privateKey = Data(hexString: "04ce0158c3746a73bd882181d5ec91fa336e399ff9cb9f1cab7b503bb1ce673add"
                              + "f56727c940b5c6b38758d1c8209dedbcb9e5c7203e652b3d49342858e3d34762"
                              + "71a1c67a6ede41bf9d6e68cc3649f934c542f2fa3329c2710583ea31d5e29d14")!
        let ciphertext = Data(hexString: "048eac0421b27fdd7a190495dc31cebe61713a6cdb57da6ad3cc1c39d29a7a93f6"
                              + "fd0b5ea63f4cef57589335dfe8ea88b2d0f2c952317e700c7d4a71673a021c36"
                              + "da958473cf086a1f083b2ba44d975176f4f55d2cdb491f8f7cc8949f9685bf")!
        let key = try XCTUnwrap(SecKeyCreateWithData(privateKey as CFData, [
            kSecAttrKeyType as String: kSecAttrKeyTypeECSECPrimeRandom,
            kSecAttrKeyClass as String: kSecAttrKeyClassPrivate,
        ] as CFDictionary, nil))
        var error: Unmanaged<CFError>?
        let plaintext = SecKeyCreateDecryptedData(key, .eciesEncryptionCofactorVariableIVX963SHA256AESGCM,
                                                  ciphertext as CFData, &error) as Data?
        XCTAssertNil(error?.takeRetainedValue())
        XCTAssertEqual(plaintext.map { String(decoding: $0, as: UTF8.self) }, "P256-SHA256-VIV")
        // With the zero IV of the non-VariableIV algorithm, the same bytes do not open.
        XCTAssertNil(SecKeyCreateDecryptedData(key, .eciesEncryptionCofactorX963SHA256AESGCM, ciphertext as CFData, nil))
    }

    func testOtherAppCannotUseOrFindTheKey() throws {
        let key = try makeKey(tag: "mine", enclave: true)
        try device.addApp("TEAM2.com.example.other", groups: ["TEAM2.com.example.other"])
        setenv("DPFS_APP", "com.example.other", 1)
        defer { unsetenv("DPFS_APP") }
        XCTAssertEqual(find(tag: "mine").0, errSecItemNotFound)
        let (signature, failure) = sign(key, Data("x".utf8))
        XCTAssertNil(signature)
        XCTAssertEqual(failure, Int(errSecMissingEntitlement), "a token does not let another app use the key")
    }
}
