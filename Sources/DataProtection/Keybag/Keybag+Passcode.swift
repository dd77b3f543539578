// From a passcode to the key that wraps the passcode classes (dpfs(5), "Passcode key
// derivation"). With a file store: Argon2id entangled with the device secret. With a
// tpm2 store, a TPM authorization too: a secret sealed in the TPM under an authValue
// derived from the passcode enters the key, so no passcode can be checked without the
// TPM saying yes — and the TPM counts every wrong one against its lockout.
import Foundation

extension Keybag {
    enum PasscodeCheck {
        case key(SecureBuffer, fingerprint: [UInt8])
        case wrong(fingerprint: [UInt8])
    }

    /// The wrapping key for a new passcode; with a TPM, a new passcode gate is sealed
    /// into `file` (its secret drawn fresh).
    static func newPasscodeKey(_ file: inout KeybagFile, passcode: SecureBuffer, kdf: KDFParameters,
                               deviceSecret: SecureBuffer) throws -> SecureBuffer {
        let entangled = try PasscodeKDF.deriveKey(passcode: passcode, parameters: kdf, deviceSecret: deviceSecret)
        guard let tcti = file.tpmTCTI else { return entangled }
        defer { entangled.wipe() }
        let gateSecret = SecureBuffer.random(count: 32)
        defer { gateSecret.wipe() }
        let auth = gateAuth(entangled)
        defer { auth.wipe() }
        file.tpmPasscodeGate = try TPMSecretStore.makeGate(gateSecret, auth: auth, tcti: tcti)
        return gatedKey(entangled, gateSecret)
    }

    /// The wrapping key a passcode gives, or `.wrong` when the TPM refuses it. A TPM in
    /// lockout throws `TPMError.lockout`: no guess was made, none is counted.
    static func checkPasscode(_ file: KeybagFile, passcode: SecureBuffer, deviceSecret: SecureBuffer) throws -> PasscodeCheck {
        let entangled = try PasscodeKDF.deriveKey(passcode: passcode, parameters: file.kdf, deviceSecret: deviceSecret)
        let mark = fingerprint(of: entangled)
        guard let tcti = file.tpmTCTI else { return .key(entangled, fingerprint: mark) }
        defer { entangled.wipe() }
        guard let gate = file.tpmPasscodeGate else { throw DeviceError.corruptKeybag("its TPM passcode gate is missing") }
        // The last wrong passcode again is known wrong already (and counts once): asking
        // the TPM would spend one of its tries on nothing.
        if let last = file.policy.lastFailureFingerprint, last.value == mark { return .wrong(fingerprint: mark) }
        let auth = gateAuth(entangled)
        defer { auth.wipe() }
        let gateSecret: SecureBuffer
        do {
            gateSecret = try TPMSecretStore.openGate(gate, auth: auth, tcti: tcti)
        } catch TPMError.authorizationFailed {
            return .wrong(fingerprint: mark)
        }
        defer { gateSecret.wipe() }
        return .key(gatedKey(entangled, gateSecret), fingerprint: mark)
    }

    /// The gate's authValue: never the key itself, so what crosses the bus to the TPM
    /// (a password session) does not unwrap anything.
    static func gateAuth(_ entangled: SecureBuffer) -> SecureBuffer {
        let auth = SecureBuffer(count: 32)
        Array("dpfs.tpm-passcode-auth.v1".utf8).withUnsafeBytes {
            Sodium.hash($0, key: entangled.bytes, into: auth.mutableBytes)
        }
        return auth
    }

    static func gatedKey(_ entangled: SecureBuffer, _ gateSecret: SecureBuffer) -> SecureBuffer {
        let key = SecureBuffer(count: 32)
        Sodium.hash(gateSecret.bytes, key: entangled.bytes, into: key.mutableBytes)
        return key
    }
}
