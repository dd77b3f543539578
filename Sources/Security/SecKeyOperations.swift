// SecKeyCreateSignature, SecKeyVerifySignature, SecKeyCreateEncryptedData,
// SecKeyCreateDecryptedData, SecKeyCopyKeyExchangeResult and SecKeyIsAlgorithmSupported
// with Apple's signatures and algorithm names. Public-key work and ordinary keys run
// here; a Secure Enclave key's private-key work is a request to the device's daemon,
// which refuses it (errSecInteractionNotAllowed) while the key's class is locked and,
// for a key behind an access control, asks the simulated user first (errSecAuthFailed,
// errSecUserCanceled as a protected item's read).
import Crypto
import DPFSProtocol
import Foundation
import SecKeyCrypto

/// An ECDSA signature (X9.62 DER, or r || s for the RFC 4754 names) of `dataToSign`: a
/// message for the message algorithms, else its digest.
public func SecKeyCreateSignature(_ key: SecKey, _ algorithm: SecKeyAlgorithm, _ dataToSign: CFData,
                                  _ error: UnsafeMutablePointer<Unmanaged<CFError>?>?) -> CFData? {
    SecKeyCall.run(error) {
        let known = try SecKeyCall.algorithm(algorithm, for: .sign, key)
        switch key.material {
        case .software(let privateKey): return try ECDSA.sign(dataToSign, algorithm: known, with: privateKey)
        case .enclave(let token):
            // As on iOS, a message is hashed in the caller's process and the enclave
            // signs its digest: a message of any size, and only the digest to send.
            let (algorithm, input) = try ECDSA.digestForm(of: dataToSign, algorithm: known)
            return try SecKeyCall.daemon(.sign, key, token: token, algorithm, input)
        case .publicKey: throw SecKeyFailure(errSecParam, "a public key cannot sign")
        }
    }
}

/// Whether `signature` is `key`'s signature of `signedData`; false with errSecVerifyFailed in `error` if not.
public func SecKeyVerifySignature(_ key: SecKey, _ algorithm: SecKeyAlgorithm, _ signedData: CFData, _ signature: CFData,
                                  _ error: UnsafeMutablePointer<Unmanaged<CFError>?>?) -> Bool {
    let verified: Data? = SecKeyCall.run(error) {
        let known = try SecKeyCall.algorithm(algorithm, for: .verify, key)
        guard let publicKey = key.signingPublicKey else { throw SecKeyFailure(errSecParam, "not a P-256 key") }
        guard try ECDSA.verify(signature, of: signedData, algorithm: known, with: publicKey) else {
            throw SecKeyFailure(errSecVerifyFailed, "the signature does not verify")
        }
        return Data()
    }
    return verified != nil
}

/// Apple's ECIES ciphertext of `plaintext` for `key`'s private key.
public func SecKeyCreateEncryptedData(_ key: SecKey, _ algorithm: SecKeyAlgorithm, _ plaintext: CFData,
                                      _ error: UnsafeMutablePointer<Unmanaged<CFError>?>?) -> CFData? {
    SecKeyCall.run(error) {
        let known = try SecKeyCall.algorithm(algorithm, for: .encrypt, key)
        let recipient = try P256.KeyAgreement.PublicKey(x963Representation: key.publicKeyData)
        return try ECIES.encrypt(plaintext, to: recipient, algorithm: known)
    }
}

public func SecKeyCreateDecryptedData(_ key: SecKey, _ algorithm: SecKeyAlgorithm, _ ciphertext: CFData,
                                      _ error: UnsafeMutablePointer<Unmanaged<CFError>?>?) -> CFData? {
    SecKeyCall.run(error) {
        let known = try SecKeyCall.algorithm(algorithm, for: .decrypt, key)
        switch key.material {
        case .software(let privateKey):
            let agreement = try P256.KeyAgreement.PrivateKey(rawRepresentation: privateKey.rawRepresentation)
            return try ECIES.decrypt(ciphertext, with: agreement, algorithm: known)
        case .enclave(let token): return try SecKeyCall.daemon(.decrypt, key, token: token, known, ciphertext)
        case .publicKey: throw SecKeyFailure(errSecParam, "a public key cannot decrypt")
        }
    }
}

/// ECDH (standard or cofactor, the same on P-256): the shared secret with `publicKey`,
/// or for the X963 names its ANSI X9.63 KDF, of kSecKeyKeyExchangeParameterRequestedSize
/// bytes with kSecKeyKeyExchangeParameterSharedInfo mixed in. As on iOS the KDF runs in
/// the caller's process, over the secret the key (the enclave's too) agreed.
public func SecKeyCopyKeyExchangeResult(_ privateKey: SecKey, _ algorithm: SecKeyAlgorithm, _ publicKey: SecKey,
                                        _ parameters: CFDictionary, _ error: UnsafeMutablePointer<Unmanaged<CFError>?>?) -> CFData? {
    SecKeyCall.run(error) {
        let known = try SecKeyCall.algorithm(algorithm, for: .keyExchange, privateKey)
        let derivation = try known.hash.map { try KeyDerivation($0, parameters) }
        let secret: Data
        switch privateKey.material {
        case .software(let key):
            let agreement = try P256.KeyAgreement.PrivateKey(rawRepresentation: key.rawRepresentation)
            let other = try P256.KeyAgreement.PublicKey(x963Representation: publicKey.publicKeyData)
            secret = try agreement.sharedSecretFromKeyAgreement(with: other).withUnsafeBytes { Data($0) }
        case .enclave(let token):
            secret = try SecKeyCall.daemon(.keyExchange, privateKey, token: token, .ecdhKeyExchangeStandard,
                                           publicKey.publicKeyData)
        case .publicKey: throw SecKeyFailure(errSecParam, "a public key cannot agree on a secret")
        }
        guard let derivation else { return secret }
        return try derivation.hash.x963(secret, sharedInfo: derivation.sharedInfo, count: derivation.size)
    }
}

/// The parameters of an X963 key exchange, as Apple reads them: a size is required.
private struct KeyDerivation {
    let hash: KeyHash
    let size: Int
    let sharedInfo: Data

    init(_ hash: KeyHash, _ parameters: CFDictionary) throws {
        guard let size = parameters[kSecKeyKeyExchangeParameterRequestedSize] as? Int, size > 0 else {
            throw SecKeyFailure(errSecParam, "kSecKeyKeyExchangeParameterRequestedSize is missing")
        }
        let info = parameters[kSecKeyKeyExchangeParameterSharedInfo]
        guard info == nil || info is Data else {
            throw SecKeyFailure(errSecParam, "kSecKeyKeyExchangeParameterSharedInfo must be Data")
        }
        self.hash = hash
        self.size = size
        sharedInfo = info as? Data ?? Data()
    }
}

public func SecKeyIsAlgorithmSupported(_ key: SecKey, _ operation: SecKeyOperationType, _ algorithm: SecKeyAlgorithm) -> Bool {
    (try? SecKeyCall.algorithm(algorithm, for: operation, key)) != nil
}

public let errSecVerifyFailed: OSStatus = -67808

enum SecKeyCall {
    /// The algorithm when `key` does it for `operation`; errSecParam (as Apple) if not,
    /// errSecUnimplemented for what no key here does (RSA, SHA-224 to compute).
    static func algorithm(_ algorithm: SecKeyAlgorithm, for operation: SecKeyOperationType, _ key: SecKey) throws -> KeyAlgorithm {
        if algorithm.isRSA { throw SecKeyFailure(errSecUnimplemented, "RSA is not implemented: keys here are P-256") }
        guard let known = algorithm.known else { throw SecKeyFailure(errSecParam, "\(algorithm.rawValue) is not supported") }
        guard known.isAvailable else {
            throw SecKeyFailure(errSecUnimplemented, "\(algorithm.rawValue) needs SHA-224, which is not implemented here")
        }
        let fits: Bool
        switch operation {
        case .sign: fits = known.kind == .signature && key.isPrivate
        case .verify: fits = known.kind == .signature
        case .encrypt: fits = known.kind == .encryption
        case .decrypt: fits = known.kind == .encryption && key.isPrivate
        case .keyExchange: fits = known.kind == .keyExchange && key.isPrivate
        }
        guard fits else { throw SecKeyFailure(errSecParam, "\(algorithm.rawValue) is not supported by this key for this operation") }
        return known
    }

    static func daemon(_ operation: KeyRequest.Operation, _ key: SecKey, token: Data, _ algorithm: KeyAlgorithm,
                       _ input: Data) throws -> Data {
        let request = KeyRequest(operation: operation, token: token, algorithm: algorithm.rawValue, input: input,
                                 authentication: key.authentication?.request)
        let response = try answer(DeviceConnection.shared.send(request))
        guard response.status == errSecSuccess, let output = response.output else {
            throw SecKeyFailure(response.status, response.message ?? "the device refused the key operation")
        }
        return output
    }

    /// The daemon's reply, or why there is none.
    static func answer(_ answer: DeviceAnswer<KeyResponse>) throws -> KeyResponse {
        switch answer {
        case .answered(let response): return response
        case .unreachable: throw SecKeyFailure(errSecNotAvailable, "no dpfs device answers (is DPFS_MOUNT set?)")
        case .tooLarge:
            throw SecKeyFailure(errSecParam, "the input is larger than a request to the device may be (16 MiB)")
        }
    }

    /// Runs `body`; a failure fills `error` and answers nil.
    static func run(_ error: UnsafeMutablePointer<Unmanaged<CFError>?>?, _ body: () throws -> Data) -> Data? {
        do {
            return try body()
        } catch let failure as SecKeyFailure {
            report(failure.status, failure.message, to: error)
        } catch KeyCryptoError.decode {
            report(errSecDecode, "the input does not decrypt under this key", to: error)
        } catch KeyCryptoError.unavailable {
            report(errSecUnimplemented, "the algorithm needs SHA-224, which is not implemented here", to: error)
        } catch _ {
            report(errSecParam, "the input does not suit this algorithm", to: error)
        }
        return nil
    }
}
