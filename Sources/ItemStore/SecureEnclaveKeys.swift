// Where a Secure Enclave key's private scalar lives, in place of the enclave dpfs
// lacks (dpfs(5) "Secure Enclave keys"). It never leaves the daemon in clear:
//   wrapped   = XChaCha20-Poly1305 under the enclave key, additional data
//               "dpfs.secure-enclave.key.v1" and the public key;
//   the item  = the wrapped scalar as the key item's secret, which the item store
//               seals again under the class key of the item's accessibility;
//   a token   = what an app's SecKey holds: the wrapped scalar sealed under that
//               class key, bound to the accessibility, the access group and the
//               public key. Opening it needs the class key, so a WhenUnlocked key
//               cannot sign while the device is locked, as on iOS.
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
    /// never sits in a Swift Data.
    func generate() -> (wrapped: Data, publicKey: Data) {
        while true {
            let scalar = SecureBuffer.random(count: Self.scalarSize)
            defer { scalar.wipe() }
            guard let key = try? P256.Signing.PrivateKey(rawRepresentation: scalar.bytes) else { continue }
            let publicKey = key.publicKey.x963Representation
            return (Data(AEAD.seal(scalar, additionalData: Self.innerAD(publicKey), key: enclaveKey)), publicKey)
        }
    }

    /// The token of a wrapped scalar; errSecInteractionNotAllowed when the class key is not in memory.
    func token(wrapped: Data, accessibility: Accessibility, group: String, publicKey: Data) throws -> Data {
        let ad = Self.outerAD(accessibility, group, publicKey)
        let inner = wrapped.withUnsafeBytes { SecureBuffer(copying: $0) }
        defer { inner.wipe() }
        guard let sealed = device.withClassKey(accessibility.protectionClass, { AEAD.seal(inner, additionalData: ad, key: $0) }) else {
            throw ItemCrypto.unavailable(accessibility)
        }
        return Data(FieldEncoding.lengthPrefixed([Self.tokenMagic, Array(accessibility.rawValue.utf8), Array(group.utf8),
                                                 Array(publicKey), sealed]))
    }

    /// Lends `body` the private scalar of a token the caller may use, in locked memory
    /// wiped when `body` returns, checked against the token's public key.
    func withScalar<R>(token: Data, caller: AccessScope, _ body: (UnsafeRawBufferPointer) throws -> R) throws -> R {
        guard let fields = token.withUnsafeBytes(FieldEncoding.fields), fields.count == 5, fields[0] == Self.tokenMagic,
              let accessibility = String(validating: fields[1], as: UTF8.self).flatMap(Accessibility.init(rawValue:)),
              let group = String(validating: fields[2], as: UTF8.self) else {
            throw SecError(SecStatus.param, "not the token of a Secure Enclave key")
        }
        guard caller.allows(group) else {
            throw SecError(SecStatus.missingEntitlement, "the key belongs to access group \(group)")
        }
        let publicKey = Data(fields[3])
        let opened: SecureBuffer?? = device.withClassKey(accessibility.protectionClass) {
            AEAD.open(fields[4], additionalData: Self.outerAD(accessibility, group, publicKey), key: $0)
        }
        guard let outcome = opened else { throw ItemCrypto.unavailable(accessibility) }
        guard let inner = outcome else { throw Self.damaged }
        defer { inner.wipe() }
        guard let scalar = AEAD.open(Array(inner.bytes), additionalData: Self.innerAD(publicKey), key: enclaveKey) else {
            throw Self.damaged
        }
        defer { scalar.wipe() }
        guard let key = try? P256.Signing.PrivateKey(rawRepresentation: scalar.bytes),
              key.publicKey.x963Representation == publicKey else { throw Self.damaged }
        return try body(scalar.bytes)
    }

    private static let damaged = SecError(SecStatus.decode, "the key's token fails its integrity check")

    private static let tokenMagic = Array("dpfs.setoken.v1".utf8)

    private static func innerAD(_ publicKey: Data) -> [UInt8] {
        FieldEncoding.lengthPrefixed([Array("dpfs.secure-enclave.key.v1".utf8), Array(publicKey)])
    }

    private static func outerAD(_ accessibility: Accessibility, _ group: String, _ publicKey: Data) -> [UInt8] {
        FieldEncoding.lengthPrefixed([tokenMagic, Array(accessibility.rawValue.utf8), Array(group.utf8), Array(publicKey)])
    }
}
