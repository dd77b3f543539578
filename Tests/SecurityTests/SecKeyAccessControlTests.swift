// Secure Enclave keys behind a SecAccessControl against a mounted device, written as
// Apple-platform code writes them: each private-key use asks the simulated user
// (answered through `dpfs biometry respond`), finding the key asks nothing,
// .privateKeyUsage alone asks nothing, re-enrollment invalidates a
// .biometryCurrentSet key, and the flags cannot be taken off the key.
import Foundation
import LocalAuthentication
@testable import Security
import XCTest

final class SecKeyAccessControlTests: MountedDeviceTestCase {
    private let message = Data("challenge 7".utf8)

    private func respond(_ answer: String, times: Int = 1) throws {
        try device.dpfs("biometry", "respond", device.mountpoint, answer, "--times", String(times))
    }

    private func makeKey(tag: String, _ flags: SecAccessControlCreateFlags,
                         extra: [String: Any] = [:], enclave: Bool = true) throws -> SecKey {
        var error: Unmanaged<CFError>?
        guard let access = SecAccessControlCreateWithFlags(kCFAllocatorDefault, kSecAttrAccessibleWhenUnlockedThisDeviceOnly,
                                                           flags, &error) else {
            throw error!.takeRetainedValue() as Error
        }
        var privateAttributes: [String: Any] = [
            kSecAttrIsPermanent as String: true,
            kSecAttrApplicationTag as String: Data(tag.utf8),
            kSecAttrAccessControl as String: access,
        ]
        privateAttributes.merge(extra) { $1 }
        var attributes: [String: Any] = [
            kSecAttrKeyType as String: kSecAttrKeyTypeECSECPrimeRandom,
            kSecAttrKeySizeInBits as String: 256,
            kSecPrivateKeyAttrs as String: privateAttributes,
        ]
        if enclave { attributes[kSecAttrTokenID as String] = kSecAttrTokenIDSecureEnclave }
        guard let key = SecKeyCreateRandomKey(attributes as CFDictionary, &error) else {
            throw error!.takeRetainedValue() as Error
        }
        return key
    }

    private func find(tag: String, _ extra: [String: Any] = [:]) -> (OSStatus, SecKey?) {
        var query: [String: Any] = [kSecClass as String: kSecClassKey, kSecAttrApplicationTag as String: Data(tag.utf8),
                                    kSecReturnRef as String: true]
        query.merge(extra) { $1 }
        var result: CFTypeRef?
        let status = SecItemCopyMatching(query as CFDictionary, &result)
        return (status, result.map { $0 as! SecKey })
    }

    /// The signature, or the OSStatus in the CFError.
    private func sign(_ key: SecKey) -> (Data?, Int?) {
        var error: Unmanaged<CFError>?
        let signature = SecKeyCreateSignature(key, .ecdsaSignatureMessageX962SHA256, message as CFData, &error)
        return (signature as Data?, error.map { CFErrorGetCode($0.takeRetainedValue()) })
    }

    private func verifies(_ key: SecKey, _ signature: Data) -> Bool {
        SecKeyVerifySignature(SecKeyCopyPublicKey(key)!, .ecdsaSignatureMessageX962SHA256, message as CFData,
                              signature as CFData, nil)
    }

    func testBiometryKeyAsksAtEachUse() throws {
        try device.dpfs("biometry", "enroll", device.mountpoint)
        let key = try makeKey(tag: "bio.sign", [.privateKeyUsage, .biometryCurrentSet])
        let attributes: [String: Any] = try XCTUnwrap(SecKeyCopyAttributes(key))
        XCTAssertEqual((attributes[kSecAttrAccessControl as String] as? SecAccessControl)?.flags,
                       [.privateKeyUsage, .biometryCurrentSet])

        // Finding the key asks nothing (as on iOS): no answer is queued, and the find
        // forbids asking.
        let (status, found) = find(tag: "bio.sign", [kSecUseAuthenticationUI as String: kSecUseAuthenticationUIFail])
        XCTAssertEqual(status, errSecSuccess)
        let foundKey = try XCTUnwrap(found)
        let foundAttributes: [String: Any] = try XCTUnwrap(SecKeyCopyAttributes(foundKey))
        XCTAssertEqual((foundAttributes[kSecAttrAccessControl as String] as? SecAccessControl)?.flags,
                       [.privateKeyUsage, .biometryCurrentSet])
        // ... and using it then may not ask either.
        XCTAssertEqual(sign(foundKey).1, Int(errSecInteractionNotAllowed))

        for candidate in [key, try XCTUnwrap(find(tag: "bio.sign").1)] {
            try respond("match")
            let (signature, failure) = sign(candidate)
            XCTAssertNil(failure)
            XCTAssertTrue(verifies(key, try XCTUnwrap(signature)))
            try respond("nomatch")
            XCTAssertEqual(sign(candidate).1, Int(errSecAuthFailed))
            try respond("cancel")
            XCTAssertEqual(sign(candidate).1, Int(errSecUserCanceled))
        }

        // Decryption and key exchange ask too; the public-key side never does.
        let publicKey = try XCTUnwrap(SecKeyCopyPublicKey(key))
        let algorithm = SecKeyAlgorithm.eciesEncryptionCofactorVariableIVX963SHA256AESGCM
        let ciphertext = try XCTUnwrap(SecKeyCreateEncryptedData(publicKey, algorithm, Data("s3cret".utf8) as CFData, nil) as Data?)
        try respond("cancel")
        var error: Unmanaged<CFError>?
        XCTAssertNil(SecKeyCreateDecryptedData(key, algorithm, ciphertext as CFData, &error))
        XCTAssertEqual(error.map { CFErrorGetCode($0.takeRetainedValue()) }, Int(errSecUserCanceled))
        try respond("match")
        XCTAssertEqual(SecKeyCreateDecryptedData(key, algorithm, ciphertext as CFData, nil) as Data?, Data("s3cret".utf8))
        let other = try XCTUnwrap(SecKeyCreateRandomKey([kSecAttrKeyType as String: kSecAttrKeyTypeECSECPrimeRandom,
                                                         kSecAttrKeySizeInBits as String: 256] as CFDictionary, nil))
        try respond("match")
        let shared = SecKeyCopyKeyExchangeResult(key, .ecdhKeyExchangeStandard, SecKeyCopyPublicKey(other)!, [:] as CFDictionary, nil)
        XCTAssertEqual(shared as Data?,
                       SecKeyCopyKeyExchangeResult(other, .ecdhKeyExchangeStandard, publicKey, [:] as CFDictionary, nil) as Data?)

        // Five failed matches lock biometry out: a match no longer signs, until the passcode.
        try respond("nomatch", times: 5)
        for _ in 0..<5 { XCTAssertEqual(sign(key).1, Int(errSecAuthFailed)) }
        try respond("match")
        XCTAssertEqual(sign(key).1, Int(errSecAuthFailed), "locked out")
        try device.lockNow()
        try device.unlock()
        XCTAssertNil(sign(key).1, "the passcode ended the lockout, and the lockout took no answer: the queued match signs")
    }

    func testPrivateKeyUsageAloneAsksNothing() throws {
        try device.dpfs("biometry", "enroll", device.mountpoint)
        let plain = try makeKey(tag: "usage.only", [.privateKeyUsage])
        let guarded = try makeKey(tag: "usage.bio", [.privateKeyUsage, .biometryAny])
        try respond("cancel")
        let (signature, failure) = sign(plain)
        XCTAssertNil(failure)
        XCTAssertTrue(verifies(plain, try XCTUnwrap(signature)))
        XCTAssertNil(sign(try XCTUnwrap(find(tag: "usage.only").1)).1)
        XCTAssertEqual(sign(guarded).1, Int(errSecUserCanceled), "the cancel was still queued for the key that asks")
    }

    /// An ordinary key's private key goes to the app: its item asks when found, as a
    /// protected password does, and the key then signs in the app without asking.
    func testOrdinaryKeyItemAsksWhenFound() throws {
        try device.dpfs("biometry", "enroll", device.mountpoint)
        let made = try makeKey(tag: "soft.key", [.biometryAny], enclave: false)
        try respond("cancel")
        XCTAssertEqual(find(tag: "soft.key").0, errSecUserCanceled)
        try respond("nomatch")
        XCTAssertEqual(find(tag: "soft.key").0, errSecAuthFailed)
        try respond("match")
        let (status, found) = find(tag: "soft.key")
        XCTAssertEqual(status, errSecSuccess)
        let key = try XCTUnwrap(found)
        XCTAssertEqual(SecKeyCopyExternalRepresentation(key, nil) as Data?, SecKeyCopyExternalRepresentation(made, nil) as Data?)
        let (signature, failure) = sign(key)
        XCTAssertNil(failure)
        XCTAssertTrue(verifies(made, try XCTUnwrap(signature)))
        var attributes: CFTypeRef?
        let query: [String: Any] = [kSecClass as String: kSecClassKey, kSecAttrApplicationTag as String: Data("soft.key".utf8),
                                    kSecReturnAttributes as String: true]
        XCTAssertEqual(SecItemCopyMatching(query as CFDictionary, &attributes), errSecSuccess, "attributes alone ask nothing")
        XCTAssertEqual(((attributes as? [String: Any])?[kSecAttrAccessControl as String] as? SecAccessControl)?.flags,
                       .biometryAny)
    }

    func testReenrollInvalidatesCurrentSetKeyOnly() throws {
        try device.dpfs("biometry", "enroll", device.mountpoint)
        let current = try makeKey(tag: "set.current", [.privateKeyUsage, .biometryCurrentSet])
        let any = try makeKey(tag: "set.any", [.privateKeyUsage, .biometryAny])
        try respond("match")
        XCTAssertNil(sign(current).1)

        try device.dpfs("biometry", "reenroll", device.mountpoint)
        try respond("match")
        XCTAssertEqual(sign(current).1, Int(errSecAuthFailed), "bound to an enrollment that is gone")
        let (status, found) = find(tag: "set.current")
        XCTAssertEqual(status, errSecSuccess, "the key is still found, as on iOS")
        XCTAssertEqual(sign(try XCTUnwrap(found)).1, Int(errSecAuthFailed))
        // The invalid key took no answer: the queued match signs with the .biometryAny key.
        let (signature, failure) = sign(any)
        XCTAssertNil(failure)
        XCTAssertTrue(verifies(any, try XCTUnwrap(signature)))

        // Nothing enrolled: a .biometryCurrentSet key has no set to be bound to.
        try device.dpfs("biometry", "unenroll", device.mountpoint)
        XCTAssertThrowsError(try makeKey(tag: "set.none", [.privateKeyUsage, .biometryCurrentSet])) { error in
            XCTAssertEqual((error as NSError).code, Int(errSecAuthFailed))
        }
    }

    func testPasscodeAndLAContextAnswerTheKey() async throws {
        let passcodeKey = try makeKey(tag: "pass.key", [.privateKeyUsage, .devicePasscode])
        try device.dpfs("biometry", "respond", device.mountpoint, "passcode", "--passcode-file", device.passcodeFile)
        XCTAssertNil(sign(passcodeKey).1)
        try respond("match")
        XCTAssertEqual(sign(passcodeKey).1, Int(errSecAuthFailed), "a face is not the passcode")

        try device.dpfs("biometry", "enroll", device.mountpoint)
        _ = try makeKey(tag: "ctx.key", [.privateKeyUsage, .biometryAny])
        let context = LAContext()
        try respond("match")
        let evaluated = try await context.evaluatePolicy(.deviceOwnerAuthenticationWithBiometrics, localizedReason: "Sign in")
        XCTAssertTrue(evaluated)
        // The context given to the find travels with the key: two signatures, no answer queued, no asking allowed.
        let (status, found) = find(tag: "ctx.key", [kSecUseAuthenticationContext as String: context,
                                                   kSecUseAuthenticationUI as String: kSecUseAuthenticationUIFail])
        XCTAssertEqual(status, errSecSuccess)
        let key = try XCTUnwrap(found)
        XCTAssertNil(sign(key).1)
        XCTAssertNil(sign(key).1)
        // A key made with the context carries it as well.
        let made = try makeKey(tag: "ctx.made", [.privateKeyUsage, .biometryAny],
                               extra: [kSecUseAuthenticationContext as String: context])
        XCTAssertNil(sign(made).1)
        context.invalidate()
        XCTAssertEqual(sign(try XCTUnwrap(find(tag: "ctx.key", [kSecUseAuthenticationContext as String: context,
                                                              kSecUseAuthenticationUI as String: kSecUseAuthenticationUIFail]).1)).1,
                       Int(errSecInteractionNotAllowed), "an invalidated context proves nothing")
    }

    func testAContextEvaluatedBeforeAReenrollmentSignsNothingAfter() async throws {
        try device.dpfs("biometry", "enroll", device.mountpoint)
        _ = try makeKey(tag: "ctx.current", [.privateKeyUsage, .biometryCurrentSet])
        let context = LAContext()
        try respond("match")
        let evaluated = try await context.evaluatePolicy(.deviceOwnerAuthenticationWithBiometrics, localizedReason: "Sign in")
        XCTAssertTrue(evaluated)
        let key = try XCTUnwrap(find(tag: "ctx.current", [kSecUseAuthenticationContext as String: context]).1)
        XCTAssertNil(sign(key).1)
        try device.dpfs("biometry", "reenroll", device.mountpoint)
        XCTAssertEqual(sign(key).1, Int(errSecAuthFailed), "the context's match was of the old enrollment")
    }

    func testAKeyFollowsItsContextsInteractionNotAllowed() throws {
        try device.dpfs("biometry", "enroll", device.mountpoint)
        _ = try makeKey(tag: "ctx.quiet", [.privateKeyUsage, .biometryAny])
        let context = LAContext()
        let key = try XCTUnwrap(find(tag: "ctx.quiet", [kSecUseAuthenticationContext as String: context]).1)
        context.interactionNotAllowed = true
        let started = Date()
        XCTAssertEqual(sign(key).1, Int(errSecInteractionNotAllowed), "read at the operation, as the context is now")
        XCTAssertLessThan(Date().timeIntervalSince(started), 3)
        context.interactionNotAllowed = false
        try respond("match")
        XCTAssertNil(sign(key).1)
    }

    func testFlagsCannotBeStripped() throws {
        try device.dpfs("biometry", "enroll", device.mountpoint)
        let key = try makeKey(tag: "strip.me", [.privateKeyUsage, .biometryCurrentSet])
        let itemQuery: [String: Any] = [kSecClass as String: kSecClassKey, kSecAttrApplicationTag as String: Data("strip.me".utf8)]

        // Not through the keychain: the access control, and the accessibility it carries, are fixed.
        let weaker = SecAccessControlCreateWithFlags(nil, kSecAttrAccessibleWhenUnlockedThisDeviceOnly, [.privateKeyUsage], nil)!
        XCTAssertEqual(SecItemUpdate(itemQuery as CFDictionary, [kSecAttrAccessControl as String: weaker] as CFDictionary),
                       errSecParam)
        XCTAssertEqual(SecItemUpdate(itemQuery as CFDictionary,
                                     [kSecAttrAccessible as String: kSecAttrAccessibleAlwaysThisDeviceOnly] as CFDictionary),
                       errSecParam)
        let label = [kSecAttrLabel as String: "renamed"] as CFDictionary
        XCTAssertEqual(SecItemUpdate(itemQuery as CFDictionary, label), errSecSuccess, "other attributes still change")
        try respond("cancel")
        XCTAssertEqual(sign(try XCTUnwrap(find(tag: "strip.me").1)).1, Int(errSecUserCanceled), "the found key still asks")

        // Not in the token: a token whose flags or enrollment were edited does not open.
        guard case .enclave(let token) = key.material else { return XCTFail("not a Secure Enclave key") }
        var fields = try XCTUnwrap(Self.fields(token))
        XCTAssertEqual(fields.count, 7)
        XCTAssertEqual(String(decoding: fields[3], as: UTF8.self), String(SecAccessControlCreateFlags([.privateKeyUsage, .biometryCurrentSet]).rawValue))
        for edit in [{ (fields: inout [[UInt8]]) in fields[3] = Array(String(SecAccessControlCreateFlags.privateKeyUsage.rawValue).utf8) },
                     { (fields: inout [[UInt8]]) in fields[3] = []; fields[4] = [] },
                     { (fields: inout [[UInt8]]) in fields[4] = Array("0123456789abcdef0123456789abcdef".utf8) }] {
            var forged = fields
            edit(&forged)
            let forgedKey = SecKey(material: .enclave(token: Self.lengthPrefixed(forged)), publicKey: key.publicKeyData,
                                   attributes: [:])
            XCTAssertEqual(sign(forgedKey).1, Int(errSecDecode))
        }
        fields[0] = Array("dpfs.setoken.v1".utf8)
        fields.remove(at: 4)
        fields.remove(at: 3)
        let oldFormat = SecKey(material: .enclave(token: Self.lengthPrefixed(fields)), publicKey: key.publicKeyData, attributes: [:])
        XCTAssertEqual(sign(oldFormat).1, Int(errSecParam), "a token without its access control is no token")
        // None of that took the queued answer.
        try respond("match")
        XCTAssertNil(sign(key).1)
    }

    private static func fields(_ bytes: Data) -> [[UInt8]]? {
        var fields: [[UInt8]] = []
        let bytes = [UInt8](bytes)
        var offset = 0
        while offset < bytes.count {
            guard bytes.count - offset >= 4 else { return nil }
            let count = Int(bytes[offset]) << 24 | Int(bytes[offset + 1]) << 16 | Int(bytes[offset + 2]) << 8 | Int(bytes[offset + 3])
            offset += 4
            guard bytes.count - offset >= count else { return nil }
            fields.append(Array(bytes[offset..<(offset + count)]))
            offset += count
        }
        return fields
    }

    private static func lengthPrefixed(_ fields: [[UInt8]]) -> Data {
        var bytes: [UInt8] = []
        for field in fields {
            let count = UInt32(field.count)
            bytes += [UInt8(count >> 24), UInt8(count >> 16 & 0xff), UInt8(count >> 8 & 0xff), UInt8(count & 0xff)]
            bytes += field
        }
        return Data(bytes)
    }
}
