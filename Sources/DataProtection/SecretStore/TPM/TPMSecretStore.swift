// The tpm2 secret store (dpfs(5)). Three things live in the TPM:
// - the device secret, sealed in a noDA keyedhash object with an empty authValue: any
//   process that holds this TPM can unseal it at boot, so class none and the metadata
//   key are there before first unlock, as on iOS; a copy of the device directory on
//   another machine cannot (its blobs, kept in keybag.json, load into no other TPM);
// - the passcode gate, a second sealed object (dictionary-attack protected) whose
//   authValue is derived from the passcode; it holds a secret that enters the
//   passcode key (Keybag), so every passcode check is a TPM authorization and every
//   wrong one counts against the TPM's lockout;
// - the device's record (DeviceRecord), in an NV index (TPMRecordIndex).
public enum TPMSecretStore {
    /// A new device secret, sealed; the NV index for the device's record is defined.
    static func createSecret(for deviceUUID: String, tcti: String) throws -> (SecureBuffer, TPMSealedBlobs) {
        let context = try TPMContext(tcti: tcti)
        let secret = SecureBuffer.random(count: DeviceSecretStore.secretSize)
        do {
            let blobs = try TPMSealedObject.create(context, sealing: secret, auth: nil)
            try TPMRecordIndex.define(context, for: deviceUUID)
            return (secret, blobs)
        } catch {
            secret.wipe()
            throw error
        }
    }

    static func loadSecret(_ blobs: TPMSealedBlobs, tcti: String) throws -> SecureBuffer {
        let context = try TPMContext(tcti: tcti)
        let secret = try TPMSealedObject.unseal(context, blobs, auth: nil)
        guard secret.count == DeviceSecretStore.secretSize else {
            throw TPMError.failed(command: "Unseal (not a device secret)", code: 0)
        }
        return secret
    }

    /// Whether a TPM answers at `tcti` (`init` seals to it by default when one does).
    public static func isUsable(tcti: String) -> Bool {
        (try? TPMContext(tcti: tcti)) != nil
    }

    /// Removes the NV index of a device whose init failed.
    static func discard(_ deviceUUID: String, tcti: String) {
        guard let context = try? TPMContext(tcti: tcti) else { return }
        TPMRecordIndex.undefine(context, for: deviceUUID)
    }

    static func readRecord(for deviceUUID: String, tcti: String) throws -> [UInt8]? {
        try TPMRecordIndex.read(try TPMContext(tcti: tcti), for: deviceUUID)
    }

    static func writeRecord(_ bytes: [UInt8], for deviceUUID: String, tcti: String) throws {
        try TPMRecordIndex.write(try TPMContext(tcti: tcti), bytes, for: deviceUUID)
    }

    /// Seals `gateSecret` for `auth` (derived from the passcode).
    static func makeGate(_ gateSecret: SecureBuffer, auth: SecureBuffer, tcti: String) throws -> TPMSealedBlobs {
        try TPMSealedObject.create(try TPMContext(tcti: tcti), sealing: gateSecret, auth: auth)
    }

    /// The gate's secret for the right `auth`; `TPMError.authorizationFailed` for a
    /// wrong one (counted by the TPM), `TPMError.lockout` when the TPM refuses to try.
    static func openGate(_ blobs: TPMSealedBlobs, auth: SecureBuffer, tcti: String) throws -> SecureBuffer {
        try TPMSealedObject.unseal(try TPMContext(tcti: tcti), blobs, auth: auth)
    }

    /// The TPM's dictionary-attack state, for `dpfs tpm-lockout` (tests and diagnosis).
    public static func lockoutState(tcti: String) throws -> TPMLockout {
        let context = try TPMContext(tcti: tcti)
        return TPMLockout(counter: try context.property(TPMContext.ptLockoutCounter),
                          maxTries: try context.property(TPMContext.ptMaxAuthFail),
                          recoveryTime: try context.property(TPMContext.ptLockoutInterval))
    }

    /// Sets the dictionary-attack parameters of a TPM whose lockout auth is empty.
    public static func setLockoutParameters(tcti: String, maxTries: Int, recoveryTime: Int, lockoutRecovery: Int) throws {
        try TPMContext(tcti: tcti).setDictionaryAttackParameters(
            maxTries: UInt32(maxTries), recoveryTime: UInt32(recoveryTime), lockoutRecovery: UInt32(lockoutRecovery))
    }
}
