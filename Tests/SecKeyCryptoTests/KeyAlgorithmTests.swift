// SecKey's elliptic-curve algorithms on swift-crypto: what each name asks (read from
// Apple's string), the X9.63 KDF against swift-crypto's own, and a signature,
// ciphertext or derived key for every one that can be done here.
import Crypto
import Foundation
import SecKeyCrypto
import Testing

@Suite struct KeyAlgorithmTests {
    @Test func everyNameSaysWhatItDoes() {
        #expect(KeyAlgorithm.allCases.count == 53)
        for algorithm in KeyAlgorithm.allCases {
            #expect(algorithm.rawValue.hasPrefix("algid:"))
            if algorithm.hashesMessage {
                #expect(algorithm.digestAlgorithm != algorithm && !algorithm.digestAlgorithm.hashesMessage, "\(algorithm)")
                #expect(algorithm.digestAlgorithm.hash == algorithm.hash && algorithm.digestAlgorithm.signsRaw == algorithm.signsRaw)
            } else {
                #expect(algorithm.digestAlgorithm == algorithm)
            }
            let computesSHA224 = algorithm.hash == .sha224 && (algorithm.kind != .signature || algorithm.hashesMessage)
            #expect(algorithm.isAvailable == !computesSHA224, "\(algorithm)")
        }
        #expect(KeyAlgorithm.ecdhKeyExchangeCofactorX963SHA384.kind == .keyExchange)
        #expect(KeyAlgorithm.ecdhKeyExchangeCofactorX963SHA384.derivesKey && !KeyAlgorithm.ecdhKeyExchangeCofactor.derivesKey)
        #expect(KeyAlgorithm.eciesEncryptionStandardX963SHA512AESGCM.hash == .sha512)
        #expect(!KeyAlgorithm.eciesEncryptionStandardX963SHA512AESGCM.variableIV)
        #expect(KeyAlgorithm.eciesEncryptionCofactorVariableIVX963SHA384AESGCM.variableIV)
        #expect(KeyAlgorithm.ecdsaSignatureRFC4754.signsRaw && KeyAlgorithm.ecdsaSignatureRFC4754.hash == nil)
    }

    @Test func theX963KDFIsSwiftCryptos() throws {
        let a = P256.KeyAgreement.PrivateKey(), b = P256.KeyAgreement.PrivateKey()
        let secret = try a.sharedSecretFromKeyAgreement(with: b.publicKey)
        let raw = secret.withUnsafeBytes { Data($0) }
        let info = Data("shared info".utf8)
        for count in [1, 16, 20, 32, 33, 100] {
            func theirs<H: HashFunction>(_ hash: H.Type) -> Data {
                secret.x963DerivedSymmetricKey(using: hash, sharedInfo: info, outputByteCount: count).withUnsafeBytes { Data($0) }
            }
            #expect(try KeyHash.sha1.x963(raw, sharedInfo: info, count: count) == theirs(Insecure.SHA1.self))
            #expect(try KeyHash.sha256.x963(raw, sharedInfo: info, count: count) == theirs(SHA256.self))
            #expect(try KeyHash.sha384.x963(raw, sharedInfo: info, count: count) == theirs(SHA384.self))
            #expect(try KeyHash.sha512.x963(raw, sharedInfo: info, count: count) == theirs(SHA512.self))
        }
        #expect(throws: KeyCryptoError.self) { try KeyHash.sha224.x963(raw, sharedInfo: info, count: 16) }
        #expect(throws: KeyCryptoError.self) { try KeyHash.sha256.x963(raw, sharedInfo: info, count: 0) }
    }

    @Test func everySignatureAlgorithmSignsAndVerifies() throws {
        let key = P256.Signing.PrivateKey()
        let message = Data("a message".utf8)
        for algorithm in KeyAlgorithm.allCases where algorithm.kind == .signature && algorithm.isAvailable {
            let input = algorithm.hashesMessage ? message
                : algorithm.hash.map { Data(repeating: 7, count: $0.byteCount) } ?? Data(repeating: 7, count: 32)
            let signature = try ECDSA.sign(input, algorithm: algorithm, with: key)
            #expect(try ECDSA.verify(signature, of: input, algorithm: algorithm, with: key.publicKey), "\(algorithm)")
            #expect(algorithm.signsRaw ? signature.count == 64 : signature.first == 0x30, "\(algorithm)")
            let (digestAlgorithm, digest) = try ECDSA.digestForm(of: input, algorithm: algorithm)
            #expect(try ECDSA.verify(signature, of: digest, algorithm: digestAlgorithm, with: key.publicKey),
                    "what a key held elsewhere signs in place of \(algorithm) verifies as it")
        }
        #expect(throws: KeyCryptoError.self) {
            try ECDSA.sign(Data(count: 31), algorithm: .ecdsaSignatureDigestX962SHA256, with: key)
        }
        #expect(try ECDSA.sign(Data(count: 28), algorithm: .ecdsaSignatureDigestX962SHA224, with: key).first == 0x30)
        #expect(throws: KeyCryptoError.self) {
            try ECDSA.sign(message, algorithm: .ecdsaSignatureMessageX962SHA224, with: key)
        }
    }

    @Test func everyEncryptionAlgorithmRoundTrips() throws {
        let key = P256.KeyAgreement.PrivateKey()
        let plaintext = Data("plaintext".utf8)
        for algorithm in KeyAlgorithm.allCases where algorithm.kind == .encryption && algorithm.isAvailable {
            let ciphertext = try ECIES.encrypt(plaintext, to: key.publicKey, algorithm: algorithm)
            #expect(ciphertext.count == 65 + plaintext.count + 16)
            #expect(try ECIES.decrypt(ciphertext, with: key, algorithm: algorithm) == plaintext, "\(algorithm)")
        }
        let sha1 = try ECIES.encrypt(plaintext, to: key.publicKey, algorithm: .eciesEncryptionStandardX963SHA1AESGCM)
        #expect(throws: KeyCryptoError.self) {
            try ECIES.decrypt(sha1, with: key, algorithm: .eciesEncryptionStandardX963SHA256AESGCM)
        }
    }
}
