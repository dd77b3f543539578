// Where a Secure Enclave key's private scalar lives, in place of the enclave dpfs
// lacks (dpfs(5) "Secure Enclave keys"). It never leaves the daemon in clear:
//   wrapped   = XChaCha20-Poly1305 under the enclave key, additional data
//               "dpfs.secure-enclave.key.v1" and the public key (v2 adds the
//               access control, for a key made with one);
//   the item  = the wrapped scalar as the key item's secret, which the item store
//               seals again under the class key of the item's accessibility;
//   a token   = what an app's SecKey holds: the wrapped scalar sealed under that
//               class key, bound to the accessibility, the access group, the access
//               control and the public key. Opening it needs the class key, so a
//               WhenUnlocked key cannot sign while the device is locked, as on iOS;
//               a token whose access control was edited or dropped does not open.
//               A WhenPasscodeSetThisDeviceOnly key's token binds the passcode's era
//               too: iOS destroys that class's key when the passcode is removed, so
//               such a token never opens again, even under a new passcode.
// The enclave key is a BLAKE2b subkey of the metadata key, itself derived from the
// device secret: with the tpm2 store that secret is sealed to the TPM, so neither
// the device directory nor a token is any use away from the machine's TPM.
import Crypto
import DataProtection
import DPFSProtocol
import Foundation

struct SecureEnclaveKeys {
    /// The store's tokenID value for such keys (Apple's "com.apple.setoken").
    static let tokenID = "secureEnclave"
    static let scalarSize = 32

    let device: LockStateManager
    private let enclaveKey: SecureBuffer

    init(device: LockStateManager) {
        self.device = device
        enclaveKey = SecureBuffer(count: AEAD.keySize)
        Array("dpfs.secure-enclave.wrap.v1".utf8).withUnsafeBytes {
            Sodium.hash($0, key: device.metadataKey.bytes, into: enclaveKey.mutableBytes)
        }
    }

    /// A new key pair: its wrapped scalar and public key (X9.63). The scalar is drawn
    /// into locked memory and handed to swift-crypto from there (a random 32 bytes is a
    /// valid P-256 scalar but with odds of about 2^-32, when it is drawn again), so it
    /// never sits in a Swift Data. The wrap binds `accessControl`: the scalar opens
    /// only under the flags the key was made with.
    func generate(accessControl: StoredAccessControl?) -> (wrapped: Data, publicKey: Data) {
        while true {
            let scalar = SecureBuffer.random(count: Self.scalarSize)
            defer { scalar.wipe() }
            guard let key = try? P256.Signing.PrivateKey(rawRepresentation: scalar.bytes) else { continue }
            let publicKey = key.publicKey.x963Representation
            return (Data(AEAD.seal(scalar, additionalData: Self.innerAD(publicKey, accessControl), key: enclaveKey)), publicKey)
        }
    }

    /// The token of a wrapped scalar; errSecInteractionNotAllowed when the class key is not in memory.
    func token(wrapped: Data, accessibility: Accessibility, group: String, accessControl: StoredAccessControl?,
               publicKey: Data) throws -> Data {
        let bound = TokenFields(accessibility: accessibility, group: group, accessControl: accessControl, publicKey: publicKey)
        let ad = try sealingData(bound)
        let inner = wrapped.withUnsafeBytes { SecureBuffer(copying: $0) }
        defer { inner.wipe() }
        guard let sealed = device.withClassKey(accessibility.protectionClass, { AEAD.seal(inner, additionalData: ad, key: $0) }) else {
            throw ItemCrypto.unavailable(accessibility)
        }
        return Data(FieldEncoding.lengthPrefixed(bound.fields + [sealed]))
    }

    /// Lends `body` the private scalar of a token the caller may use, in locked memory
    /// wiped when `body` returns, checked against the token's public key. `authorize`
    /// is given the key's access control once the token has proved it genuine (it
    /// opened under the class key) and before the scalar is unwrapped: it throws to
    /// refuse, after asking the user if the access control says so.
    func withScalar<R>(token: Data, caller: AccessScope, authorize: (StoredAccessControl?) throws -> Void,
                       _ body: (UnsafeRawBufferPointer) throws -> R) throws -> R {
        guard let fields = token.withUnsafeBytes(FieldEncoding.fields), let bound = TokenFields(fields) else {
            throw SecError(SecStatus.param, "not the token of a Secure Enclave key")
        }
        guard caller.allows(bound.group) else {
            throw SecError(SecStatus.missingEntitlement, "the key belongs to access group \(bound.group)")
        }
        let ad = try sealingData(bound)
        let opened: SecureBuffer?? = device.withClassKey(bound.accessibility.protectionClass) {
            AEAD.open(fields[fields.count - 1], additionalData: ad, key: $0)
        }
        guard let outcome = opened else { throw ItemCrypto.unavailable(bound.accessibility) }
        guard let inner = outcome else { throw bound.diesWithPasscode ? Self.destroyedSince : Self.damaged }
        defer { inner.wipe() }
        try authorize(bound.accessControl)
        guard let scalar = AEAD.open(Array(inner.bytes), additionalData: Self.innerAD(bound.publicKey, bound.accessControl),
                                     key: enclaveKey) else {
            throw Self.damaged
        }
        defer { scalar.wipe() }
        guard let key = try? P256.Signing.PrivateKey(rawRepresentation: scalar.bytes),
              key.publicKey.x963Representation == bound.publicKey else { throw Self.damaged }
        return try body(scalar.bytes)
    }

    private static let damaged = SecError(SecStatus.decode, "the key's token fails its integrity check")
    private static let destroyed = SecError(SecStatus.itemNotFound,
                                            "a WhenPasscodeSetThisDeviceOnly key is destroyed with the passcode")
    private static let destroyedSince = SecError(SecStatus.itemNotFound,
                                                 "the key was destroyed when the passcode was removed (or its token is damaged)")

    /// The token seal's additional data: a WhenPasscodeSetThisDeviceOnly key's binds
    /// the passcode's era as well; without a passcode there is no such key.
    private func sealingData(_ bound: TokenFields) throws -> [UInt8] {
        guard bound.diesWithPasscode else { return bound.additionalData }
        guard let era = device.passcodeEra else { throw Self.destroyed }
        return FieldEncoding.lengthPrefixed(bound.fields + [Array(String(era).utf8)])
    }

    /// A key without access control keeps the wrap of keys made before access control
    /// reached keys; one with it binds its flags and enrollment too.
    private static func innerAD(_ publicKey: Data, _ accessControl: StoredAccessControl?) -> [UInt8] {
        guard let accessControl else {
            return FieldEncoding.lengthPrefixed([Array("dpfs.secure-enclave.key.v1".utf8), Array(publicKey)])
        }
        return FieldEncoding.lengthPrefixed([Array("dpfs.secure-enclave.key.v2".utf8), Array(publicKey)]
                                            + TokenFields.accessControlFields(accessControl))
    }
}

/// What a token names in clear and its seal binds: dpfs(5) "Secure Enclave keys".
private struct TokenFields {
    static let magic = Array("dpfs.setoken.v2".utf8)

    let accessibility: Accessibility
    let group: String
    let accessControl: StoredAccessControl?
    let publicKey: Data

    init(accessibility: Accessibility, group: String, accessControl: StoredAccessControl?, publicKey: Data) {
        self.accessibility = accessibility; self.group = group; self.accessControl = accessControl; self.publicKey = publicKey
    }

    /// The fields of a token: these, then the sealed wrapped scalar.
    init?(_ fields: [[UInt8]]) {
        guard fields.count == 7, fields[0] == Self.magic,
              let accessibility = String(validating: fields[1], as: UTF8.self).flatMap(Accessibility.init(rawValue:)),
              let group = String(validating: fields[2], as: UTF8.self),
              let flags = String(validating: fields[3], as: UTF8.self),
              let domain = String(validating: fields[4], as: UTF8.self) else { return nil }
        if flags.isEmpty {
            guard domain.isEmpty else { return nil }
            accessControl = nil
        } else {
            guard let raw = UInt(flags) else { return nil }
            accessControl = StoredAccessControl(flags: AccessControlFlags(rawValue: raw), boundDomain: domain.isEmpty ? nil : domain)
        }
        self.accessibility = accessibility
        self.group = group
        publicKey = Data(fields[5])
    }

    static func accessControlFields(_ accessControl: StoredAccessControl?) -> [[UInt8]] {
        [Array((accessControl.map { String($0.flags.rawValue) } ?? "").utf8), Array((accessControl?.boundDomain ?? "").utf8)]
    }

    var fields: [[UInt8]] {
        [Self.magic, Array(accessibility.rawValue.utf8), Array(group.utf8)] + Self.accessControlFields(accessControl)
            + [Array(publicKey)]
    }

    var additionalData: [UInt8] { FieldEncoding.lengthPrefixed(fields) }

    var diesWithPasscode: Bool { accessibility == .whenPasscodeSetThisDeviceOnly }
}
