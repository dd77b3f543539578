// The device's lock state machine: which class keys are in memory, the grace timer
// between `lock` and the wipe, failed-attempt policy, passcode changes and events.
// It knows nothing of files: holders of file keys register a revoker and are told
// which classes to give up before the class keys are wiped.
import DPFSProtocol
import Dispatch
import Foundation
import Synchronization

public enum LockError: Error, CustomStringConvertible, Equatable {
    case wrongPasscode(failedAttempts: Int, wait: TimeInterval?)
    case mustWait(TimeInterval)
    case erased
    case noPasscode
    case passcodeAlreadySet
    case unavailable
    /// A failed attempt could not be saved (a full disk): no passcode is tried until it is.
    case failureNotSaved(String)
    /// An empty passcode, never a device's: refused untried, so it counts as no attempt.
    case emptyPasscode

    public var description: String {
        switch self {
        case .wrongPasscode(let attempts, let wait):
            let suffix = wait.map { "; try again in \(describeWait($0))" } ?? ""
            return "wrong passcode (\(attempts) failed attempt\(attempts == 1 ? "" : "s"))\(suffix)"
        case .mustWait(let seconds):
            return "too many failed attempts; try again in \(describeWait(seconds))"
        case .erased:
            return "the device was erased after too many failed attempts; its protected data is gone"
        case .noPasscode: return "no passcode is set on this device"
        case .passcodeAlreadySet: return "a passcode is already set; use dpfs passcode change"
        case .unavailable: return "the device must be unlocked first"
        case .emptyPasscode: return "the passcode is empty; it was not tried and counts as no attempt"
        case .failureNotSaved(let reason):
            return "an earlier failed attempt could not be saved (\(reason)); no passcode is tried until it is: "
                + "free space where the device and its secret store are"
        }
    }
}

public final class LockStateManager: Sendable {
    public typealias Revoker = @Sendable (_ classes: Set<ProtectionClass>, _ reason: RevokeReason) -> Void
    public enum RevokeReason: Sendable { case lock, restart }

    private struct Core: ~Copyable {
        var keys: ClassKeySet
        var keybag: KeybagFile
        var phase: LockPhase
        /// Bumped by every transition so a pending grace timer knows it was cancelled.
        var generation: UInt64 = 0
        /// When the grace period of the lock under way ends, on the device's clock.
        var graceEnds: Date?
        /// Since when the device is locked, on its clock (the inactivity reboot).
        var lockedSince: Date?
        /// `keybag` holds a failed attempt its save could not write (a full disk).
        var failureUnsaved = false
        /// When the passcode was last entered since the boot, on the device's clock.
        var passcodeEntered: Date?
    }

    public let directory: DeviceDirectory
    public let gracePeriod: TimeInterval
    /// A device locked this long restarts, back to before first unlock (iOS 18's
    /// inactivity reboot); nil: never.
    public let inactivityReboot: TimeInterval?
    /// How long the device stays locked before completeWhenUserInactive's key goes
    /// (until the next unlock). iOS publishes no value; see dpfs(1), --user-inactive-period.
    public let userInactivePeriod: TimeInterval
    public static let defaultUserInactivePeriod: TimeInterval = 24 * 3600
    public let clock = DeviceClock()
    /// Debug builds only carry anything here (TestHooks).
    let testHooks: TestHooks
    private let deviceSecret: SecureBuffer
    /// Authenticates file headers and directory classes (MetadataKey.swift). Derived
    /// from the device secret alone, so it is there in every lock state, as metadata is.
    public let metadataKey: SecureBuffer
    /// Seals and opens names and symlink targets (NameCipher); derived from the device
    /// secret, so names are there in every lock state, as on iOS.
    public let nameCipher: NameCipher
    private let core: ReadWriteLocked<Core>
    /// The classes whose keys `core` holds, readable without its lock.
    private let availableClasses: AvailableClasses
    /// Serialises transitions (lock wipe, unlock, restart, passcode changes) without
    /// holding `core` across the slow parts (KDF, page-cache invalidation).
    private let transition = Mutex<Void>(())
    private let revokers = Mutex<[Revoker]>([])
    /// How many inodes the mounted filesystem holds for the kernel (status), once mounted.
    private let mountedInodes = LateCallback<Int>()
    private let mountedTransport = LateCallback<String>()
    private let observers = Mutex<[UInt64: @Sendable (DeviceEvent) -> Void]>([:])
    private let nextObserver = Atomic<UInt64>(0)
    public let completeUnlessOpenPublicKey: [UInt8]
    /// One line for the daemon's log when the boot had to bring the keybag and the
    /// device's record in the secret store together (LockStateManager+Record); nil otherwise.
    public let bootNotice: String?
    /// The device's name in its secret store, and that store (the keybag's record of both).
    public let deviceUUID: String
    public let secretStore: SecretStoreLocation

    /// Boots the device: reads the keybag and unwraps what needs no passcode.
    public init(directory: DeviceDirectory, gracePeriod: TimeInterval, inactivityReboot: TimeInterval? = nil,
                userInactivePeriod: TimeInterval = LockStateManager.defaultUserInactivePeriod,
                testHooks: TestHooks = TestHooks()) throws {
        guard directory.isInitialised else { throw DeviceError.notInitialised(directory.root) }
        self.directory = directory
        self.gracePeriod = gracePeriod
        self.inactivityReboot = inactivityReboot
        self.userInactivePeriod = userInactivePeriod
        self.testHooks = testHooks
        let secret = try KeybagFile.loadDeviceSecret(of: directory)
        self.deviceSecret = secret
        self.metadataKey = MetadataKey.derive(from: secret)
        self.nameCipher = NameCipher(deviceSecret: secret)
        var keybag = try KeybagFile.load(from: directory, deviceSecret: secret)
        self.deviceUUID = keybag.deviceUUID
        self.secretStore = try keybag.storeLocation()
        self.bootNotice = try Self.reconcile(&keybag, directory: directory, deviceSecret: secret, testHooks: testHooks)
        // A device made before a class existed gets its key at the first chance.
        if Keybag.addMissingClassKeys(&keybag, deviceSecret: secret) {
            try keybag.save(in: directory, deviceSecret: secret)
        }
        self.completeUnlessOpenPublicKey = keybag.completeUnlessOpenPublicKey.value
        let keys = try Keybag.bootKeys(keybag, deviceSecret: secret)
        let phase: LockPhase = keybag.passcodeSet ? .beforeFirstUnlock : .unlocked
        self.availableClasses = keys.available
        self.core = ReadWriteLocked(Core(keys: keys, keybag: keybag, phase: phase))
    }

    // MARK: Queries

    public var phase: LockPhase { core.withReadLock { $0.phase } }

    public var defaultProtection: ProtectionClass { core.withLock { $0.keybag.defaultProtection } }

    /// The on-disk format the device's keybag records (KeybagFile.currentVersion once
    /// an older device was brought up to date).
    public var formatVersion: Int { core.withLock { $0.keybag.formatVersion } }

    /// Records that the device's tree is in the current format (after the walk that
    /// upgraded it): saved last, so a crash before it repeats the walk.
    public func markUpgraded() throws {
        try transition.withLock { _ in
            var keybag = core.withLock { $0.keybag }
            guard keybag.formatVersion != KeybagFile.currentVersion else { return }
            keybag.formatVersion = KeybagFile.currentVersion
            try keybag.save(in: directory, deviceSecret: deviceSecret)
            let saved = keybag
            core.withLock { $0.keybag = saved }
        }
    }

    /// The class the keybag records for a directory whose class was changed through
    /// the mount; nil for one whose class never changed (its only record is its first).
    public func recordedDirectoryClass(_ directoryID: [UInt8]) -> ProtectionClass? {
        let key = Hex.encode(directoryID)
        return core.withLock { $0.keybag.directoryClasses?[key] }
    }

    /// Records a directory's new class in the keybag (a save, so the secret store's
    /// record vouches for it).
    public func recordDirectoryClass(_ directoryID: [UInt8], _ protectionClass: ProtectionClass) throws {
        let key = Hex.encode(directoryID)
        try transition.withLock { _ in
            var keybag = core.withLock { $0.keybag }
            guard keybag.directoryClasses?[key] != protectionClass else { return }
            keybag.directoryClasses = (keybag.directoryClasses ?? [:]).merging([key: protectionClass]) { $1 }
            try keybag.save(in: directory, deviceSecret: deviceSecret)
            let saved = keybag
            core.withLock { $0.keybag = saved }
        }
    }

    public func isAvailable(_ protectionClass: ProtectionClass) -> Bool {
        availableClasses.contains(protectionClass)
    }

    public var passcodeSet: Bool { core.withReadLock { $0.keybag.passcodeSet } }

    /// When the passcode was last entered since the boot (an unlock, a passcode answer
    /// to a prompt, a passcode change), on the device's clock; nil when it has not been
    /// since the boot. Biometry waits for it after a restart and after 48 hours.
    public var passcodeLastEntered: Date? { core.withReadLock { $0.passcodeEntered } }

    /// nil without a passcode; otherwise the passcode's era, which a removal ends for
    /// good: what binds it (a WhenPasscodeSetThisDeviceOnly key) dies with the passcode.
    public var passcodeEra: Int? {
        core.withReadLock { $0.keybag.passcodeSet ? $0.keybag.passcodeRemovals ?? 0 : nil }
    }

    /// Runs `body` with the class key (for completeUnlessOpen, the private key) while
    /// holding it steady; nil when the class is unavailable.
    public func withClassKey<R>(_ protectionClass: ProtectionClass, _ body: (SecureBuffer) throws -> R) rethrows -> R? {
        try core.withReadLock { core in
            guard let key = core.keys.key(for: protectionClass) else { return nil }
            return try body(key)
        }
    }

    public func status() -> DeviceStatus {
        var status = core.withLock { core in
            var classes: [String: Bool] = [:]
            for protectionClass in ProtectionClass.allCases {
                classes[protectionClass.name] = core.keys.isAvailable(protectionClass)
            }
            return DeviceStatus(state: core.phase, classes: classes, passcodeSet: core.keybag.passcodeSet,
                                failedAttempts: core.keybag.policy.failedAttempts,
                                retryAfter: core.keybag.policy.waitRemaining(now: clock.now),
                                erased: core.keybag.policy.erased,
                                gracePeriod: gracePeriod,
                                defaultProtection: core.keybag.defaultProtection.name,
                                deviceDirectory: directory.root, pid: getpid(),
                                secretStore: secretStore.description,
                                inodes: mountedInodes())
        }
        status.clockAdvanced = clock.advanced > 0 ? clock.advanced : nil
        status.inactivityRebootHours = inactivityReboot.map { $0 / 3600 }
        status.userInactivePeriodHours = userInactivePeriod / 3600
        status.transport = mountedTransport()
        return status
    }

    /// Has status name the transport the mount's requests come by, as `transport` tells it.
    public func setTransport(_ transport: @escaping @Sendable () -> String) {
        mountedTransport.set(transport)
    }

    /// Has status report the mounted filesystem's inode count, as `count` tells it.
    public func setMountedInodeCount(_ count: @escaping @Sendable () -> Int) {
        mountedInodes.set(count)
    }

    // MARK: Subscriptions

    public func addRevoker(_ revoker: @escaping Revoker) {
        revokers.withLock { $0.append(revoker) }
    }

    @discardableResult
    public func observe(_ observer: @escaping @Sendable (DeviceEvent) -> Void) -> UInt64 {
        let id = nextObserver.add(1, ordering: .relaxed).newValue
        observers.withLock { $0[id] = observer }
        return id
    }

    public func stopObserving(_ id: UInt64) {
        _ = observers.withLock { $0.removeValue(forKey: id) }
    }

    private func emit(_ kind: DeviceEvent.Kind, failedAttempts: Int? = nil) {
        let event = DeviceEvent(kind, state: phase, failedAttempts: failedAttempts)
        for observer in observers.withLock({ Array($0.values) }) { observer(event) }
    }

    // MARK: Transitions

    /// Starts locking: state `locking` now, keys wiped after the grace period (or now).
    /// Returns false when there is no passcode, so nothing becomes unavailable.
    @discardableResult
    public func lock(now: Bool = false) -> Bool {
        let started: (UInt64, Bool)? = core.withLock { core in
            guard core.keybag.passcodeSet else { return nil }
            if core.phase == .beforeFirstUnlock || core.phase == .locked { return nil }
            if core.phase == .locking && !now { return nil }
            let alreadyLocking = core.phase == .locking
            core.phase = .locking
            core.generation += 1
            core.graceEnds = now ? nil : clock.now.addingTimeInterval(gracePeriod)
            return (core.generation, alreadyLocking)
        }
        guard let (generation, alreadyLocking) = started else { return core.withLock { $0.keybag.passcodeSet } }
        if !alreadyLocking { emit(.willBecomeUnavailable) }
        if now || gracePeriod <= 0 {
            finishLocking(generation: generation)
        } else {
            DispatchQueue.global().asyncAfter(deadline: .now() + gracePeriod) { [self] in
                finishLocking(generation: generation)
            }
        }
        return true
    }

    private func finishLocking(generation: UInt64) {
        let wiped = transition.withLock { _ -> Bool in
            // An unlock or restart since the lock began cancels this wipe.
            guard core.withLock({ $0.generation == generation && $0.phase == .locking }) else { return false }
            // Class keys first, so no open can unwrap a file key while files are revoked.
            core.withLock { core in
                core.keys.wipe(.complete)
                core.keys.wipe(.completeUnlessOpen)
            }
            for revoke in revokers.withLock({ $0 }) { revoke([.complete, .completeUnlessOpen], .lock) }
            core.withLock { core in
                core.phase = .locked
                core.graceEnds = nil
                core.lockedSince = clock.now
            }
            return true
        }
        guard wiped else { return }
        emit(.didBecomeUnavailable)
        DispatchQueue.global().asyncAfter(deadline: .now() + userInactivePeriod) { [self] in
            expireIfInactive(generation: generation)
        }
        if let inactivityReboot {
            DispatchQueue.global().asyncAfter(deadline: .now() + inactivityReboot) { [self] in
                restartIfInactive(generation: generation)
            }
        }
    }

    /// Moves the device's clock forward: a grace period, a passcode delay or the
    /// inactivity reboot that falls due on the way happens now.
    public func advanceClock(by seconds: TimeInterval) {
        clock.advance(by: seconds)
        let (generation, graceEnds) = core.withLock { ($0.generation, $0.graceEnds) }
        if let graceEnds, graceEnds <= clock.now { finishLocking(generation: generation) }
        expireIfInactive(generation: core.withLock { $0.generation })
        restartIfInactive(generation: core.withLock { $0.generation })
    }

    /// completeWhenUserInactive's expiry, when the device has stayed locked for the
    /// user-inactive period on its clock and nothing happened since (`generation`): its
    /// class key and its files' keys go as complete's do at a lock, until the next unlock.
    private func expireIfInactive(generation: UInt64) {
        let expired = transition.withLock { _ -> Bool in
            let now = clock.now
            let due = core.withReadLock { core -> Bool in
                guard core.generation == generation, core.phase == LockPhase.locked, core.keys.isAvailable(.completeWhenUserInactive),
                      let since = core.lockedSince else { return false }
                return since.addingTimeInterval(userInactivePeriod) <= now
            }
            guard due else { return false }
            // The class key first, so no open can unwrap a file key while files are revoked.
            core.withLock { $0.keys.wipe(.completeWhenUserInactive) }
            for revoke in revokers.withLock({ $0 }) { revoke([.completeWhenUserInactive], .lock) }
            return true
        }
        if expired { emit(.userInactiveExpired) }
    }

    /// The inactivity reboot, when the device has been locked long enough on its clock
    /// and nothing happened since (`generation`).
    private func restartIfInactive(generation: UInt64) {
        guard let inactivityReboot else { return }
        let now = clock.now
        let due = core.withReadLock { core -> Bool in
            guard core.generation == generation, core.phase == LockPhase.locked, let since = core.lockedSince else { return false }
            return since.addingTimeInterval(inactivityReboot) <= now
        }
        if due { restart() }
    }

    /// Simulated reboot: every class key but none's is wiped.
    public func restart() {
        transition.withLock { _ in
            let passcodeSet = core.withLock { core -> Bool in
                core.generation += 1
                core.graceEnds = nil
                core.lockedSince = nil
                core.passcodeEntered = nil
                return core.keybag.passcodeSet
            }
            // Without a passcode every class stays available, as on a device with none.
            guard passcodeSet else { return }
            let wiped: Set<ProtectionClass> = [.complete, .completeUnlessOpen, .untilFirstAuth, .completeWhenUserInactive]
            core.withLock { core in
                for protectionClass in wiped { core.keys.wipe(protectionClass) }
            }
            for revoke in revokers.withLock({ $0 }) { revoke(wiped, .restart) }
            core.withLock { $0.phase = .beforeFirstUnlock }
        }
        emit(.restart)
    }

    /// Verifies the passcode and restores the class keys.
    public func unlock(passcode: SecureBuffer) throws {
        // An unlock of an unlocked device changes nothing a listener must hear of.
        let wasUnlocked = try transition.withLock { _ -> Bool in
            try acceptPasscode(passcode) { keys in
                core.withLock { core -> LockPhase in
                    for protectionClass in ProtectionClass.allCases {
                        if let key = keys.key(for: protectionClass) {
                            core.keys.insert(key, for: protectionClass)
                        }
                    }
                    defer { core.phase = .unlocked }
                    core.generation += 1
                    core.graceEnds = nil
                    core.lockedSince = nil
                    return core.phase
                } == .unlocked
            }
        }
        if !wasUnlocked { emit(.didBecomeAvailable) }
    }

    /// Checks the passcode as an unlock does (counted, delayed, erasing at the limit)
    /// and leaves the lock state as it is: on iOS a passcode typed into an app's prompt
    /// proves the user to that prompt; it does not unlock the device.
    public func verifyPasscode(_ passcode: SecureBuffer) throws {
        try transition.withLock { _ in try acceptPasscode(passcode) { _ in } }
    }

    /// Tries `passcode` against the keybag and, when it is right, hands `body` the class
    /// keys it opens, with the keybag as now saved. Caller holds `transition`.
    private func acceptPasscode<R>(_ passcode: SecureBuffer, _ body: (borrowing ClassKeySet) -> R) throws -> R {
        guard passcode.count > 0 else { throw LockError.emptyPasscode }
        try saveUnsavedFailure()
        let keybag = core.withLock { $0.keybag }
        if keybag.policy.erased && !keybag.passcodeSet { throw LockError.erased }
        guard keybag.passcodeSet else { throw LockError.noPasscode }
        if let wait = keybag.policy.waitRemaining(now: clock.now) { throw LockError.mustWait(wait) }
        let reserved = try countAttempt()
        let adopted = core.withLock { $0.keybag }
        var opened = adopted
        switch try tried(reserved, { try Keybag.unlock(&opened, passcode: passcode, deviceSecret: deviceSecret) }) {
        case .wrongPasscode(let fingerprint):
            try recordFailure(fingerprint: fingerprint, reserved: reserved)
        case .unlocked(let keys):
            var policy = adopted.policy
            policy.recordSuccess()
            var saved = opened
            saved.policy = policy
            // A class key the unlock added (Keybag.addedClasses) is saved with it.
            if policy != keybag.policy || opened.wrappedKeys.count != keybag.wrappedKeys.count {
                try saved.save(in: directory, deviceSecret: deviceSecret, resettingFailures: true)
            } else {
                try clearReservation()
            }
            let kept = saved
            let now = clock.now
            core.withLock { $0.keybag = kept; $0.passcodeEntered = now }
            return body(keys)
        }
    }

    /// reserveAttempt, keeping in memory the count it adopted, refused or not.
    private func countAttempt() throws -> Int {
        var policy = core.withLock { $0.keybag.policy }
        defer {
            let adopted = policy
            core.withLock { $0.keybag.policy = adopted }
        }
        return try reserveAttempt(&policy)
    }

    private func recordFailure(fingerprint: [UInt8], reserved: Int) throws -> Never {
        var keybag = core.withLock { $0.keybag }
        let now = clock.now
        let outcome = keybag.policy.recordFailure(fingerprint: fingerprint, now: now)
        if outcome == .repeated { try? releaseReservation(reserved) }
        #if DPFS_TEST_HOOKS
        testHooks.scaleWait(&keybag.policy, now: now)
        #endif
        if outcome == .erase {
            try eraseKeyMaterial(&keybag)
        }
        let onDisk = keybag.generation
        var unsaved = false
        do { try keybag.save(in: directory, deviceSecret: deviceSecret) } catch {
            // The failure counts all the same, with its delay: kept here, and saved
            // before any passcode is tried again (saveUnsavedFailure), so that a full
            // disk and a restart open no way to more guesses.
            keybag.generation = onDisk
            unsaved = true
        }
        let attempts = keybag.policy.failedAttempts
        let wait = keybag.policy.waitRemaining(now: now)
        let kept = keybag
        core.withLock { $0.keybag = kept; $0.failureUnsaved = unsaved }
        emit(.attemptFailed, failedAttempts: attempts)
        if outcome == .erase {
            emit(.erased, failedAttempts: attempts)
            throw LockError.erased
        }
        throw LockError.wrongPasscode(failedAttempts: attempts, wait: wait)
    }

    /// Saves a failed attempt whose own save failed; until that succeeds, every
    /// passcode attempt is refused untried (failureNotSaved). Caller holds `transition`.
    private func saveUnsavedFailure() throws {
        guard core.withLock({ $0.failureUnsaved }) else { return }
        var keybag = core.withLock { $0.keybag }
        do { try keybag.save(in: directory, deviceSecret: deviceSecret) } catch {
            throw LockError.failureNotSaved("\(error)")
        }
        let saved = keybag
        core.withLock { $0.keybag = saved; $0.failureUnsaved = false }
    }

    /// Crypto-shred: fresh class keys replace the old ones, so every file and item
    /// sealed before is unrecoverable; the device comes back without a passcode.
    private func eraseKeyMaterial(_ keybag: inout KeybagFile) throws {
        let fresh = try Keybag.erased(keybag, deviceSecret: deviceSecret)
        let keys = try Keybag.bootKeys(fresh, deviceSecret: deviceSecret)
        // Class keys first, as at a lock: nothing may unwrap a file key with the old
        // ones (an open, or a handle's retry) while files are revoked.
        core.withLock { $0.keys.wipeAll() }
        for revoke in revokers.withLock({ $0 }) { revoke(Set(ProtectionClass.allCases), .restart) }
        keybag = fresh
        core.withLock { core in
            for protectionClass in ProtectionClass.allCases {
                if let key = keys.key(for: protectionClass) { core.keys.insert(key, for: protectionClass) }
            }
            core.phase = .unlocked
            core.generation += 1
        }
    }

    // MARK: Passcode lifecycle

    /// Sets, changes or removes the passcode; only the class-key wrapping changes.
    /// `current` is required whenever a passcode is set now.
    public func changePasscode(current: SecureBuffer?, new: SecureBuffer?) throws {
        // As the CLI refuses one: an empty new passcode would be a passcode none can type.
        guard current.map({ $0.count > 0 }) ?? true, new.map({ $0.count > 0 }) ?? true else { throw LockError.emptyPasscode }
        try transition.withLock { _ in
            try saveUnsavedFailure()
            var keybag = core.withLock { $0.keybag }
            if keybag.passcodeSet {
                guard let current else { throw LockError.wrongPasscode(failedAttempts: keybag.policy.failedAttempts, wait: nil) }
                if let wait = keybag.policy.waitRemaining(now: clock.now) { throw LockError.mustWait(wait) }
                let reserved = try countAttempt()
                keybag = core.withLock { $0.keybag }
                switch try tried(reserved, { try Keybag.unlock(&keybag, passcode: current, deviceSecret: deviceSecret) }) {
                case .wrongPasscode(let fingerprint):
                    try recordFailure(fingerprint: fingerprint, reserved: reserved)
                case .unlocked(let keys):
                    try Keybag.rewrap(&keybag, keys: keys, newPasscode: new, deviceSecret: deviceSecret)
                }
            } else {
                // A current passcode given where none is set is a mistake, not a match.
                guard current == nil, new != nil else { throw LockError.noPasscode }
                let keys = try Keybag.bootKeys(keybag, deviceSecret: deviceSecret)
                try Keybag.rewrap(&keybag, keys: keys, newPasscode: new, deviceSecret: deviceSecret)
            }
            keybag.policy.recordSuccess()
            keybag.policy.erased = false
            try keybag.save(in: directory, deviceSecret: deviceSecret, resettingFailures: true)
            let saved = keybag
            let now = clock.now
            core.withLock { core in
                core.keybag = saved
                // The user typed the passcode (the current one, or the first).
                core.passcodeEntered = saved.passcodeSet ? now : nil
                if !saved.passcodeSet { core.phase = .unlocked }
            }
        }
        if new == nil {
            // Without a passcode every class is always available.
            let keys = try Keybag.bootKeys(core.withLock { $0.keybag }, deviceSecret: deviceSecret)
            core.withLock { core in
                for protectionClass in ProtectionClass.allCases {
                    if let key = keys.key(for: protectionClass) { core.keys.insert(key, for: protectionClass) }
                }
                core.generation += 1
            }
        }
        emit(.passcodeChanged)
    }
}
