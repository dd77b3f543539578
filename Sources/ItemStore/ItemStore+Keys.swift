// SecKey calls that need the daemon: making a Secure Enclave key (kept as a key item
// when permanent), and the private-key operations of Secure Enclave keys, which run
// here on a token (SecureEnclaveKeys) and answer only their result, after asking the
// simulated user when the key's access control says so. An ordinary key is the app's:
// the app makes it and a permanent one arrives as an add, so no ordinary private key
// is ever made in, or sent from, the daemon. Never throws: every failure is an OSStatus.
import Crypto
import DataProtection
import DPFSProtocol
import Foundation
import GRDB
import SecKeyCrypto

extension ItemStore {
    public func performKey(_ request: KeyRequest) -> KeyResponse {
        do {
            try finishPendingErase()
            let caller = try scope(of: request.app)
            switch request.operation {
            case .generate: return try generateKey(request, caller: caller)
            case .sign, .decrypt, .keyExchange: return try useKey(request, caller: caller)
            }
        } catch let error as SecError {
            return KeyResponse(status: error.status, message: error.reason)
        } catch let error as DatabaseError where error.resultCode == .SQLITE_CONSTRAINT {
            return KeyResponse(status: SecStatus.duplicateItem, message: "the key item exists already")
        } catch {
            return KeyResponse(status: SecStatus.io, message: "the item store failed: \(error)")
        }
    }

    var enclave: SecureEnclaveKeys { SecureEnclaveKeys(device: device) }

    /// The attributes an app may give a new key; the rest are the key's own.
    private static let givenKeyAttributes: Set<String> = ["label", "applicationTag", "applicationLabel", "accessible",
                                                          "accessGroup", "tokenID", "synchronizable", "accessControl"]

    private func generateKey(_ request: KeyRequest, caller: AccessScope) throws -> KeyResponse {
        for name in request.attributes.keys where !Self.givenKeyAttributes.contains(name) {
            throw SecError(SecStatus.param, "a new key takes no attribute \(name)")
        }
        switch request.attributes["tokenID"] ?? "" {
        case SecureEnclaveKeys.tokenID: break
        case "": throw SecError(SecStatus.param, "an ordinary key is made by the app and stored with SecItemAdd")
        case let other: throw SecError(SecStatus.param, "no token \(other) on this device")
        }
        let parsed = try ParsedAttributes(request.attributes.merging(["class": ItemClass.keys.rawValue]) { $1 })
        let accessibility = parsed.accessible ?? .default
        // A key kept or not: on iOS its class has no key at all without a passcode.
        if accessibility == .whenPasscodeSetThisDeviceOnly && !passcodeSet {
            throw SecError(SecStatus.notAvailable, "WhenPasscodeSetThisDeviceOnly keys need a passcode")
        }
        let group = parsed.accessGroup ?? caller.defaultGroup
        guard caller.allows(group) else {
            throw SecError(SecStatus.missingEntitlement, "the app is not entitled to access group \(group)")
        }
        if parsed.synchronizable == .yes {
            throw SecError(SecStatus.param, "a Secure Enclave key never leaves the device: it cannot be synchronizable")
        }
        // Bound once, here: the token, the wrap and the key item all carry the same
        // flags and enrollment (a .biometryCurrentSet key with nothing enrolled fails).
        let accessControl = try parsed.accessControl.map { try bind($0) }
        let (secret, publicKey) = enclave.generate(accessControl: accessControl)
        var response = KeyResponse(status: SecStatus.success, publicKey: publicKey)
        response.token = try enclave.token(wrapped: secret, accessibility: accessibility, group: group,
                                           accessControl: accessControl, publicKey: publicKey)
        guard request.permanent else {
            guard isAvailable(accessibility) else { throw ItemCrypto.unavailable(accessibility) }
            return response
        }
        var attributes = request.attributes
        attributes["class"] = ItemClass.keys.rawValue
        attributes["keyClass"] = "private"
        attributes["keyType"] = "ec"
        attributes["keySizeInBits"] = "256"
        attributes["accessGroup"] = group
        attributes["publicKey"] = publicKey.hexString
        if attributes["applicationLabel"] == nil {
            attributes["applicationLabel"] = KeyEncoding.applicationLabel(ofPublicKey: publicKey).hexString
        }
        let added = try secret.withUnsafeBytes {
            try add(KeychainRequest(operation: .add, app: request.app, attributes: attributes, returning: "attributes"),
                    data: $0, caller: caller, generatedKey: true, boundAccessControl: accessControl)
        }
        response.attributes = added.items.first?.attributes
        return response
    }

    private func useKey(_ request: KeyRequest, caller: AccessScope) throws -> KeyResponse {
        guard let token = request.token, let input = request.input else {
            throw SecError(SecStatus.param, "a key operation needs the key's token and its input")
        }
        guard let algorithm = request.algorithm.flatMap(KeyAlgorithm.init(rawValue:)) else {
            throw SecError(SecStatus.param, "this key does not do \(request.algorithm ?? "an unnamed algorithm")")
        }
        let output: Data = try enclave.withScalar(token: token, caller: caller, authorize: { accessControl in
            try authorizeKeyUse(accessControl, request.authentication)
        }) { scalar in
            do {
                switch (request.operation, algorithm.kind) {
                case (.sign, .signature):
                    return try ECDSA.sign(input, algorithm: algorithm, with: P256.Signing.PrivateKey(rawRepresentation: scalar))
                case (.decrypt, .encryption):
                    return try ECIES.decrypt(input, with: P256.KeyAgreement.PrivateKey(rawRepresentation: scalar),
                                             algorithm: algorithm)
                case (.keyExchange, .keyExchange) where !algorithm.derivesKey:
                    // A KDF over the secret is the caller's to apply, as iOS applies it.
                    let other = try P256.KeyAgreement.PublicKey(x963Representation: input)
                    return try P256.KeyAgreement.PrivateKey(rawRepresentation: scalar)
                        .sharedSecretFromKeyAgreement(with: other).withUnsafeBytes { Data($0) }
                default:
                    throw SecError(SecStatus.param, "\(algorithm.rawValue) is not a \(request.operation.rawValue) algorithm")
                }
            } catch KeyCryptoError.decode {
                throw SecError(SecStatus.decode, "the input does not decrypt under this key")
            } catch KeyCryptoError.unavailable {
                // The library refuses it before asking (errSecUnimplemented).
                throw SecError(SecStatus.param, "\(algorithm.rawValue) needs SHA-224, which this device lacks")
            } catch let error as SecError {
                throw error
            } catch {
                throw SecError(SecStatus.param, "the input does not suit \(algorithm.rawValue)")
            }
        }
        return KeyResponse(status: SecStatus.success, output: output)
    }

    /// The data a find returns for `item`: a Secure Enclave key's token in place of its
    /// wrapped scalar, any other item's secret as it is.
    func replyData(for item: StoredItem) throws -> Data {
        let data = try crypto.openForReply(item)
        guard item.columns.itemClass == .keys else { return data }
        let record = try record(of: item)
        guard record.identity.keys[.tokenID] == SecureEnclaveKeys.tokenID, let accessibility = item.accessibility,
              let publicKey = record.publicKey.flatMap(Data.init(hexString:)) else { return data }
        return try enclave.token(wrapped: data, accessibility: accessibility, group: record.identity.accessGroup,
                                 accessControl: record.accessControl, publicKey: publicKey)
    }
}
