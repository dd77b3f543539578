// A passcode attempt is counted in the device's record before the passcode is tried,
// as the Secure Enclave counts before it verifies. Every copy of the device directory
// shares that record (it lives with the device secret, in the secret store), so
// attempts made at once through many copies are each counted, and the delays and the
// erase fall on them as on attempts made one by one.
import Foundation
import Synchronization

extension LockStateManager {
    /// Takes into `policy` a higher count another copy recorded (refusing with its
    /// wait, or because another copy's attempts erased the device), then counts the
    /// attempt about to be made; returns that count. Caller holds `transition`.
    func reserveAttempt(_ policy: inout PasscodePolicy) throws -> Int {
        let now = clock.now
        var wait: TimeInterval?
        var erased = false
        let record = try DeviceRecordStore.update(for: deviceUUID, in: secretStore) { record in
            // Erased, or about to be: the attempt that reached the limit erases.
            erased = record.erased || policy.eraseAfter.map { record.failedAttempts >= $0 } ?? false
            guard !erased else { return }
            if policy.adoptRecordedFailures(record.failedAttempts, now: now) {
                #if DPFS_TEST_HOOKS
                testHooks.scaleWait(&policy, now: now)
                #endif
            }
            wait = policy.waitRemaining(now: now)
            if wait == nil { record.failedAttempts = policy.failedAttempts + 1 }
        }
        if erased { throw LockError.erased }
        if let wait { throw LockError.mustWait(wait) }
        return record.failedAttempts
    }

    /// The verdict of `attempt`, or its error after taking its reservation back: an
    /// attempt that ends in an error (a TPM in dictionary-attack lockout, which judges
    /// no passcode) was never judged, so it is no failure.
    func tried(_ reserved: Int, _ attempt: () throws -> UnwrapResult) throws -> UnwrapResult {
        do {
            let verdict = try attempt()
            tpmLockoutSeen.withLock { $0 = nil }
            return verdict
        } catch {
            try? releaseReservation(reserved)
            if case TPMError.lockout(let lockout) = error {
                tpmLockoutSeen.withLock { $0 = (lockout, Date()) }
                throw LockError.tpmLockout(lockout)
            }
            throw error
        }
    }

    /// The TPM lockout the last attempt met, while it can still be in force.
    func tpmLockoutStatus() -> TPMLockoutStatus? {
        guard let seen = tpmLockoutSeen.withLock({ $0 }) else { return nil }
        let ago = Date().timeIntervalSince(seen.at)
        if let endsWithin = seen.lockout.endsWithin, ago >= endsWithin { return nil }
        return seen.lockout.status(seenAgo: ago)
    }

    /// The attempt was the last wrong passcode again, which counts once: its
    /// reservation is taken back unless another attempt counted since.
    func releaseReservation(_ reserved: Int) throws {
        try DeviceRecordStore.update(for: deviceUUID, in: secretStore) { record in
            if record.failedAttempts == reserved { record.failedAttempts = reserved - 1 }
        }
    }

    /// The passcode was right: the count starts again, as a verified passcode's save
    /// (`resettingFailures`) would leave it.
    func clearReservation() throws {
        try DeviceRecordStore.update(for: deviceUUID, in: secretStore) { $0.failedAttempts = 0 }
    }
}
