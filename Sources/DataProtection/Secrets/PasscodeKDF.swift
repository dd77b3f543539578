// Turns a passcode into the passcode key: Argon2id (crypto_pwhash) with stored
// parameters, then entangled with the device secret, which stands in for the UID key
// fused into an iPhone's Secure Enclave: without the device directory, no guess works.
import CSodium

public struct KDFParameters: Codable, Sendable, Equatable {
    public var algorithm: String = "argon2id13"
    public var opsLimit: UInt64
    public var memLimit: Int
    public var salt: Bytes

    public init(opsLimit: UInt64, memLimit: Int, salt: Bytes) {
        self.opsLimit = opsLimit
        self.memLimit = memLimit
        self.salt = salt
    }

    /// About a quarter of a second per guess on a current core (measured on the CI machine).
    public static func standard() -> KDFParameters {
        KDFParameters(opsLimit: UInt64(crypto_pwhash_OPSLIMIT_INTERACTIVE) + 1,
                      memLimit: Int(crypto_pwhash_MEMLIMIT_INTERACTIVE),
                      salt: Bytes(Sodium.randomBytes(Int(crypto_pwhash_SALTBYTES))))
    }
}

public enum PasscodeKDF {
    public enum Failure: Error { case outOfMemory }

    public static func deriveKey(passcode: SecureBuffer, parameters: KDFParameters,
                                 deviceSecret: SecureBuffer) throws -> SecureBuffer {
        let stretched = SecureBuffer(count: 32)
        let rc = parameters.salt.value.withUnsafeBytes { salt in
            crypto_pwhash(stretched.mutableBytes.start, 32,
                          UnsafeRawPointer(passcode.bytes.start).assumingMemoryBound(to: CChar.self),
                          UInt64(passcode.count),
                          salt.start,
                          parameters.opsLimit, parameters.memLimit, crypto_pwhash_ALG_ARGON2ID13)
        }
        guard rc == 0 else { throw Failure.outOfMemory }
        let key = SecureBuffer(count: 32)
        Sodium.hash(stretched.bytes, key: deviceSecret.bytes, into: key.mutableBytes)
        stretched.wipe()
        return key
    }

    /// A key derived from the device secret alone, for what needs no passcode (class none).
    public static func deviceKey(deviceSecret: SecureBuffer, purpose: String) -> SecureBuffer {
        let key = SecureBuffer(count: 32)
        Array(purpose.utf8).withUnsafeBytes { Sodium.hash($0, key: deviceSecret.bytes, into: key.mutableBytes) }
        return key
    }
}
