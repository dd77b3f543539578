// Rollback defence at boot and for the keychain (dpfs(5)): the keybag and the
// item store are checked against the device's record in the secret store, which a copy
// of the device directory cannot bring back.
import Foundation

extension LockStateManager {
    /// Brings a freshly loaded keybag and the device's record together, or refuses it.
    /// - A keybag two or more generations behind the record is an old copy: refused.
    /// - One behind is the crash between a save's two writes (the record goes first):
    ///   accepted, with the record's failure count and erase, then saved again.
    /// - No record (a device from before records): one is started from the keybag;
    ///   for a tpm2 device (whose NV index init defines) that is refused.
    /// - Ahead of the record (the record lost an update): the record catches up.
    static func reconcile(_ keybag: inout KeybagFile, directory: DeviceDirectory, deviceSecret: SecureBuffer,
                          testHooks: TestHooks) throws -> String? {
        let location = try keybag.storeLocation()
        guard let record = try DeviceRecordStore.load(for: keybag.deviceUUID, in: location) else {
            // A tpm2 device has had its NV index since init: without it, anything could
            // be an old copy.
            if case .tpm2 = location {
                throw DeviceRecordError.unreadable(store: location.description, device: keybag.deviceUUID,
                                                   reason: "its NV index is missing (removed, or the TPM was cleared)")
            }
            try keybag.save(in: directory, deviceSecret: deviceSecret)
            return "secret store \(location) held no record of device \(keybag.deviceUUID); "
                + "started one at keybag generation \(keybag.generation)"
        }
        if keybag.generation < record.keybagGeneration - 1 {
            throw DeviceRecordError.rolledBack(what: "keybag", store: location.description,
                                               found: keybag.generation, recorded: record.keybagGeneration)
        }
        var notice: String?
        if keybag.generation > record.keybagGeneration {
            notice = "the device's record in secret store \(location) was behind the keybag "
                + "(generation \(record.keybagGeneration) < \(keybag.generation)); it is brought up to date"
        }
        var changed = keybag.generation != record.keybagGeneration
        let limitReached = keybag.passcodeSet && keybag.policy.eraseAfter.map { record.failedAttempts >= $0 } ?? false
        if (record.erased || limitReached) && !keybag.policy.erased {
            // The save of an erase was cut short after the record said so, or the
            // attempt that reached the limit was counted and its process died before
            // the erase (an attempt is counted before it is tried): finish it.
            keybag = try Keybag.erased(keybag, deviceSecret: deviceSecret)
            changed = true
            notice = "the record in secret store \(location) says the device was erased; the erase is completed"
        }
        let now = Date()
        if keybag.passcodeSet && keybag.policy.adoptRecordedFailures(record.failedAttempts, now: now) {
            #if DPFS_TEST_HOOKS
            testHooks.scaleWait(&keybag.policy, now: now)
            #endif
            changed = true
        }
        if changed { try keybag.save(in: directory, deviceSecret: deviceSecret) }
        return notice
    }

    /// Checks the item store's `state` against the device's record at open (and fsck):
    /// it must be the state recorded, or the one before it where the daemon died
    /// during a write (a crash between the write's record and its commit; the record
    /// is brought back to it). Anything else is
    /// refused: older, or at the recorded generation with other rows. A record from
    /// before digests were kept takes this state, unless it is older.
    public func checkKeychainState(_ state: KeychainState) throws {
        try DeviceRecordStore.update(for: deviceUUID, in: secretStore) { record in
            if let recorded = record.keychainState {
                if state == recorded {
                    // The last write committed: the state before it is no longer one to accept.
                    record.keychainPrevious = nil
                    return
                }
                if state == record.keychainPrevious {
                    record.keychainGeneration = state.generation
                    record.keychainDigest = state.digest
                    record.keychainPrevious = nil
                    return
                }
                let floor = record.keychainPrevious?.generation ?? recorded.generation
                if state.generation < floor {
                    throw DeviceRecordError.rolledBack(what: "keychain", store: secretStore.description,
                                                       found: state.generation, recorded: recorded.generation)
                }
                throw DeviceRecordError.keychainAltered(store: secretStore.description, found: state.generation,
                                                        recorded: recorded.generation)
            }
            if state.generation < record.keychainGeneration {
                throw DeviceRecordError.rolledBack(what: "keychain", store: secretStore.description,
                                                   found: state.generation, recorded: record.keychainGeneration)
            }
            record.keychainGeneration = state.generation
            record.keychainDigest = state.digest
        }
    }

    /// Forgets the state before the last write if the database is at the recorded
    /// state (`committed`, read under the store's write lock, so no write is between
    /// its record and its commit): a copy from just before that write is then refused
    /// too. Only a crash between a write's record and its commit leaves it acceptable.
    public func settleKeychainRecord(at committed: KeychainState) throws {
        try DeviceRecordStore.update(for: deviceUUID, in: secretStore) { record in
            if record.keychainState == committed { record.keychainPrevious = nil }
        }
    }

    /// Records a write's state before its commit, with the state it replaces.
    public func recordKeychainState(_ state: KeychainState, replacing previous: KeychainState) throws {
        try DeviceRecordStore.update(for: deviceUUID, in: secretStore) { record in
            record.keychainGeneration = state.generation
            record.keychainDigest = state.digest
            record.keychainPrevious = previous
        }
    }

    /// The record as stored now (fsck and tests).
    public func deviceRecord() throws -> DeviceRecord? {
        try DeviceRecordStore.load(for: deviceUUID, in: secretStore)
    }

    /// The biometry.json digest the record vouches for (nil: none recorded yet).
    public func recordedBiometryDigest() throws -> String? {
        try DeviceRecordStore.load(for: deviceUUID, in: secretStore)?.biometryDigest
    }

    /// Records the digest of the biometry.json about to be written, before it is.
    public func recordBiometryDigest(_ digest: String) throws {
        try DeviceRecordStore.update(for: deviceUUID, in: secretStore) { $0.biometryDigest = digest }
    }
}
