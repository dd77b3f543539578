// The device's lock state machine: which class keys are in memory, the grace period
// between `lock` and the wipe, failed-attempt policy, passcode changes and events.
// It knows nothing of files: holders of file keys register a revoker and are told
// which classes to give up before the class keys are wiped.
//
// The lock's deadlines fail closed: a key whose deadline has passed is gone for every
// check of its class, and wiped there, whether or not the deadline thread has run yet
// (LockDeadlines, DeadlineThread).
import DPFSProtocol
import Foundation
import Synchronization

public enum LockError: Error, CustomStringConvertible, Equatable {
    case wrongPasscode(failedAttempts: Int, wait: TimeInterval?)
    case mustWait(TimeInterval)
    /// The TPM (a tpm2 store) refused to judge any passcode: no attempt was counted.
    case tpmLockout(TPMLockout)
    case erased
    case noPasscode
    case passcodeAlreadySet
    case unavailable
    /// A failed attempt could not be saved (a full disk): no passcode is tried until it is.
    case failureNotSaved(String)
    /// An empty passcode, never a device's: refused untried, so it counts as no attempt.
    case emptyPasscode
    /// A lock (a screen lock, a suspend, `dpfs lock`) came while the passcode was checked.
    case lockedMeanwhile

    public var description: String {
        switch self {
        case .wrongPasscode(let attempts, let wait):
            let suffix = wait.map { "; try again in \(describeWait($0))" } ?? ""
            return "wrong passcode (\(attempts) failed attempt\(attempts == 1 ? "" : "s"))\(suffix)"
        case .mustWait(let seconds):
            return "too many failed attempts; try again in \(describeWait(seconds))"
        case .tpmLockout(let lockout): return lockout.description
        case .erased:
            return "the device was erased after too many failed attempts; its protected data is gone"
        case .noPasscode: return "no passcode is set on this device"
        case .passcodeAlreadySet: return "a passcode is already set; use dpfs passcode change"
        case .unavailable: return "the device must be unlocked first"
        case .emptyPasscode: return "the passcode is empty; it was not tried and counts as no attempt"
        case .lockedMeanwhile:
            return "the device was locked while the passcode was checked (a screen lock, a suspend or dpfs lock): "
                + "it stays locked; unlock it again"
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
        var phase: LockPhase {
            // Only a lock under way or in force has deadlines.
            didSet { if phase != .locking && phase != .locked { lockedFrom = nil } }
        }
        /// Bumped by every transition so that a deadline carried out late knows whether
        /// the lock it belongs to was cancelled.
        var generation: UInt64 = 0
        /// When the lock under way takes (or took) complete's key, on the deadlines'
        /// clock (DeviceClock.uptime): the end of its grace period. Its other deadlines
        /// count from there (LockDeadlines). Published to `lockMoment` as it changes.
        var lockedFrom: TimeInterval? {
            didSet {
                lockMoment.set(lockedFrom)
                if lockedFrom == nil { userInactiveExpired = false }
            }
        }
        let lockMoment: LockMoment
        /// The lock's user-inactive expiry was carried out (revocations and event).
        var userInactiveExpired = false
        /// `keybag` holds a failed attempt its save could not write (a full disk).
        var failureUnsaved = false
        /// When the passcode was last entered since the boot, on the device's clock.
        var passcodeEntered: Date?
        /// Counts every lock asked for, carried out or not: an unlock that began before
        /// one leaves the keys where they are.
        var lockRequests: UInt64 = 0
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
    private let deadlines: LockDeadlines
    /// Core.lockedFrom, readable without its lock.
    private let lockMoment: LockMoment
    /// The thread that carries out deadlines as they fall due, once started.
    private let deadlineThread = Mutex<DeadlineThread?>(nil)
    /// The TPM's dictionary-attack lockout the last passcode attempt met, and when (on
    /// the real clock, the TPM's: `clock advance` moves neither); nil once the TPM
    /// judged a passcode since.
    let tpmLockoutSeen = Mutex<(lockout: TPMLockout, at: Date)?>(nil)
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
    /// Serialises every change of `core.keybag` with its save. A directory class change,
    /// which comes as a FUSE request, takes this lock alone and never `transition`: a
    /// lock holds that while the kernel drops pages that requests in flight hold, and
    /// on FUSE over io_uring one blocked queue thread holds every request of its CPU.
    /// Nothing is revoked, and no passcode checked, while it is held.
    private let keybagWrites = Mutex<Void>(())
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
        let openedAt = AtomicFile.fileClockNow()
        self.directory = directory
        self.gracePeriod = gracePeriod
        self.inactivityReboot = inactivityReboot
        self.userInactivePeriod = userInactivePeriod
        self.deadlines = LockDeadlines(userInactivePeriod: userInactivePeriod, inactivityReboot: inactivityReboot)
        self.testHooks = testHooks
        let secret = try KeybagFile.loadDeviceSecret(of: directory)
        self.deviceSecret = secret
        self.metadataKey = MetadataKey.derive(from: secret)
        self.nameCipher = NameCipher(deviceSecret: secret)
        var keybag = try KeybagFile.load(from: directory, deviceSecret: secret)
        self.deviceUUID = keybag.deviceUUID
        self.secretStore = try keybag.storeLocation()
        // What writes a kill cut short left: housekeeping, which fails nothing.
        directory.removeStaleTemporaries(openedAt: openedAt)
        _ = try? DeviceRecordStore.removeStaleTemporaries(for: deviceUUID, in: secretStore, openedAt: openedAt)
        self.bootNotice = try Self.reconcile(&keybag, directory: directory, deviceSecret: secret, testHooks: testHooks)
        // The clock is real time again: a wait set while it was advanced runs from now.
        keybag.policy.clampWait()
        self.completeUnlessOpenPublicKey = keybag.completeUnlessOpenPublicKey.value
        let keys = try Keybag.bootKeys(keybag, deviceSecret: secret)
        let phase: LockPhase = keybag.passcodeSet ? .beforeFirstUnlock : .unlocked
        self.availableClasses = keys.available
        let lockMoment = LockMoment()
        self.lockMoment = lockMoment
        self.core = ReadWriteLocked(Core(keys: keys, keybag: keybag, phase: phase, lockedFrom: nil, lockMoment: lockMoment))
    }

    deinit {
        deadlineThread.withLock { $0 }?.stop()
    }

    /// Starts the thread that carries out the lock's deadlines as they fall due: the
    /// daemon's, at mount. Without it a deadline is carried out at the next `status`,
    /// `advanceClock` or `lock --now`, and every check of a class made after it finds
    /// the class gone all the same.
    public func startDeadlineThread() throws {
        let thread = try DeadlineThread()
        deadlineThread.withLock { $0 = thread }
        do {
            try thread.start { [weak self] in self?.runDueDeadlines() }
        } catch {
            deadlineThread.withLock { $0 = nil }
            throw error
        }
    }

    // MARK: Queries

    /// The phase, as the deadlines passed make it whether or not they were carried out.
    public var phase: LockPhase {
        let (phase, lockedFrom) = core.withReadLock { ($0.phase, $0.lockedFrom) }
        guard let lockedFrom else { return phase }
        let elapsed = clock.uptime - lockedFrom
        if deadlines.rebooted(after: elapsed) { return .beforeFirstUnlock }
        return phase == .locking && elapsed >= 0 ? .locked : phase
    }

    public var defaultProtection: ProtectionClass { core.withLock { $0.keybag.defaultProtection } }

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
        try keybagWrites.withLock { _ in
            var keybag = core.withLock { $0.keybag }
            guard keybag.directoryClasses?[key] != protectionClass else { return }
            keybag.directoryClasses = (keybag.directoryClasses ?? [:]).merging([key: protectionClass]) { $1 }
            let before = keybag.generation
            defer {
                // Saved, or written before the save failed (KeybagFile.save): it is the device's.
                let kept = keybag
                if kept.generation != before { core.withLock { $0.keybag = kept } }
            }
            try keybag.save(in: directory, deviceSecret: deviceSecret)
        }
    }

    /// Makes `keybag` (a transition's copy, taken before its slow part) the device's,
    /// once `save` has saved it, with what a class change saved meanwhile: the directory
    /// classes, and the generation and MAC of the keybag on disk (a save from the
    /// copy's older generation would write two keybags under one generation, and a
    /// copy of the older one, put back, would pass for the crash a mount forgives).
    /// Applies `update` to the rest of the state at the same moment. Caller holds
    /// `transition`.
    @discardableResult
    private func commitKeybag(_ keybag: KeybagFile, save: (inout KeybagFile) throws -> Void = { _ in },
                              update: (inout Core) -> Void = { _ in }) throws -> KeybagFile {
        try keybagWrites.withLock { _ in
            var merged = keybag
            let current = core.withLock { $0.keybag }
            merged.directoryClasses = current.directoryClasses
            merged.generation = current.generation
            merged.mac = current.mac
            do { try save(&merged) } catch {
                // Written before the save failed (KeybagFile.save): it is the device's,
                // with what goes with it; the error still says the save is not settled.
                let written = merged
                if written.generation != current.generation {
                    core.withLock { core in
                        core.keybag = written
                        update(&core)
                    }
                }
                throw error
            }
            let kept = merged
            core.withLock { core in
                core.keybag = kept
                update(&core)
            }
            return kept
        }
    }

    /// A commit's save (KeybagFile.save).
    private func saving(resettingFailures: Bool = false) -> (inout KeybagFile) throws -> Void {
        { [directory, deviceSecret] keybag in
            try keybag.save(in: directory, deviceSecret: deviceSecret, resettingFailures: resettingFailures)
        }
    }

    public func isAvailable(_ protectionClass: ProtectionClass) -> Bool {
        availableClasses.contains(protectionClass) && !takenByDeadline(protectionClass)
    }

    /// Whether a deadline of the lock has taken `protectionClass`'s key, carried out or
    /// not. If so, the keys it takes are wiped here and now (unless another holds the
    /// lock-state's lock: this may be inside `withClassKey`), and the deadline thread is
    /// woken for the rest.
    private func takenByDeadline(_ protectionClass: ProtectionClass) -> Bool {
        guard let lockedFrom = lockMoment.value else { return false }
        let now = clock.uptime
        guard deadlines.takes(protectionClass, after: now - lockedFrom) else { return false }
        core.withLockIfFree { core in
            guard let lockedFrom = core.lockedFrom else { return }
            for taken in ProtectionClass.allCases where deadlines.takes(taken, after: now - lockedFrom) {
                core.keys.wipe(taken)
            }
        }
        deadlineThread.withLock { $0 }?.wake()
        return true
    }

    /// The classes whose keys are in memory, whatever the deadlines say (tests).
    var heldClasses: Set<ProtectionClass> {
        core.withReadLock { core in Set(ProtectionClass.allCases.filter { core.keys.isAvailable($0) }) }
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

    /// How many times the device was erased after too many failed attempts: every item
    /// sealed before the last erase is sealed under keys that are gone.
    public var erasures: Int { core.withReadLock { $0.keybag.erasures ?? 0 } }

    /// Runs `body` with the class key (for completeUnlessOpen, the private key) while
    /// holding it steady; nil when the class is unavailable.
    public func withClassKey<R>(_ protectionClass: ProtectionClass, _ body: (SecureBuffer) throws -> R) rethrows -> R? {
        if takenByDeadline(protectionClass) { return nil }
        return try core.withReadLock { core in
            guard let key = core.keys.key(for: protectionClass) else { return nil }
            return try body(key)
        }
    }

    /// The device's state, once every deadline passed is carried out (revocations
    /// included: call it outside FUSE requests). Not while a transition is under way:
    /// an unlock waiting on a TPM that does not answer would hold every status, and
    /// every `dpfs lock`'s reply, until it did; the deadline thread carries them out.
    public func status() -> DeviceStatus {
        if transition.withLockIfAvailable({ _ in true }) == true { _ = runDueDeadlines() }
        var status = core.withLock { core in
            var classes: [String: Bool] = [:]
            for protectionClass in ProtectionClass.allCases {
                classes[protectionClass.name] = core.keys.isAvailable(protectionClass)
            }
            return DeviceStatus(state: core.phase, classes: classes, passcodeSet: core.keybag.passcodeSet,
                                failedAttempts: core.keybag.policy.failedAttempts,
                                // Whole seconds, rounded up: a client that waits that long is let in.
                                retryAfter: core.keybag.policy.waitRemaining(now: clock.now)?.rounded(.up),
                                erased: core.keybag.policy.erased,
                                gracePeriod: gracePeriod,
                                defaultProtection: core.keybag.defaultProtection.name,
                                deviceDirectory: directory.root, pid: getpid(),
                                secretStore: secretStore.description,
                                inodes: mountedInodes())
        }
        status.clockAdvanced = clock.advanced > 0 ? clock.advanced : nil
        if let tpm = tpmLockoutStatus() {
            status.tpmLockout = tpm
            // A client that waits that long is let in, by dpfs's delay and the TPM alike.
            if let tpmWait = tpm.retryAfter { status.retryAfter = max(status.retryAfter ?? 0, tpmWait) }
        }
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
            core.lockRequests &+= 1
            guard core.keybag.passcodeSet else { return nil }
            if core.phase == .beforeFirstUnlock || core.phase == .locked { return nil }
            if core.phase == .locking && !now { return nil }
            let alreadyLocking = core.phase == .locking
            core.phase = .locking
            core.generation += 1
            core.lockedFrom = clock.uptime + (now ? 0 : max(gracePeriod, 0))
            return (core.generation, alreadyLocking)
        }
        guard let (generation, alreadyLocking) = started else { return core.withLock { $0.keybag.passcodeSet } }
        if !alreadyLocking { emit(.willBecomeUnavailable) }
        if now || gracePeriod <= 0 {
            finishLocking(generation: generation)
        } else {
            deadlineThread.withLock { $0 }?.wake()
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
            core.withLock { $0.phase = .locked }
            return true
        }
        guard wiped else { return }
        emit(.didBecomeUnavailable)
        // The thread sets its timer for the lock's next deadlines.
        deadlineThread.withLock { $0 }?.wake()
    }

    /// Moves the device's clock forward: a grace period, a passcode delay or the
    /// inactivity reboot that falls due on the way happens now.
    public func advanceClock(by seconds: TimeInterval) {
        clock.advance(by: seconds)
        _ = runDueDeadlines()
        deadlineThread.withLock { $0 }?.wake()
    }

    /// Carries out every deadline of the lock that has passed on the device's clock
    /// (the wipe at the end of the grace period, the user-inactive expiry, the
    /// inactivity reboot), revocations and events included; gives the next deadline on
    /// the boot clock, nil if none. Never inside a FUSE request: revoking has the
    /// kernel drop cached pages.
    func runDueDeadlines() -> TimeInterval? {
        let (generation, phase, lockedFrom) = core.withReadLock { ($0.generation, $0.phase, $0.lockedFrom) }
        if phase == .locking, let lockedFrom, lockedFrom <= clock.uptime { finishLocking(generation: generation) }
        expireIfInactive(generation: core.withReadLock { $0.generation })
        restartIfInactive(generation: core.withReadLock { $0.generation })
        let next = core.withReadLock { core -> TimeInterval? in
            guard let lockedFrom = core.lockedFrom else { return nil }
            guard core.phase == .locked else { return lockedFrom }
            let expiry = core.userInactiveExpired ? nil : lockedFrom + userInactivePeriod
            let reboot = inactivityReboot.map { lockedFrom + $0 }
            return [expiry, reboot].compactMap { $0 }.min()
        }
        return next.map(clock.bootClockReading)
    }

    /// completeWhenUserInactive's expiry, when the device has stayed locked for the
    /// user-inactive period on its clock and nothing happened since (`generation`): its
    /// class key and its files' keys go as complete's do at a lock, until the next unlock.
    private func expireIfInactive(generation: UInt64) {
        let expired = transition.withLock { _ -> Bool in
            let now = clock.uptime
            let due = core.withReadLock { core -> Bool in
                guard core.generation == generation, core.phase == LockPhase.locked, !core.userInactiveExpired,
                      let lockedFrom = core.lockedFrom else { return false }
                return lockedFrom + userInactivePeriod <= now
            }
            guard due else { return false }
            // The class key first, so no open can unwrap a file key while files are revoked.
            core.withLock { $0.keys.wipe(.completeWhenUserInactive) }
            for revoke in revokers.withLock({ $0 }) { revoke([.completeWhenUserInactive], .lock) }
            core.withLock { $0.userInactiveExpired = true }
            return true
        }
        if expired { emit(.userInactiveExpired) }
    }

    /// The inactivity reboot, when the device has been locked long enough on its clock
    /// and nothing happened since (`generation`).
    private func restartIfInactive(generation: UInt64) {
        guard let inactivityReboot else { return }
        let now = clock.uptime
        let due = core.withReadLock { core -> Bool in
            guard core.generation == generation, core.phase == LockPhase.locked, let lockedFrom = core.lockedFrom else { return false }
            return lockedFrom + inactivityReboot <= now
        }
        if due { restart() }
    }

    /// Simulated reboot: every class key but none's is wiped.
    public func restart() {
        transition.withLock { _ in
            let wiped: Set<ProtectionClass> = [.complete, .completeUnlessOpen, .untilFirstAuth, .completeWhenUserInactive]
            let passcodeSet = core.withLock { core -> Bool in
                core.generation += 1
                core.passcodeEntered = nil
                // Without a passcode every class stays available, as on a device with none.
                if core.keybag.passcodeSet {
                    for protectionClass in wiped { core.keys.wipe(protectionClass) }
                }
                // Only now: until its keys are wiped, a reboot overdue is still seen as taken.
                core.lockedFrom = nil
                return core.keybag.passcodeSet
            }
            guard passcodeSet else { return }
            for revoke in revokers.withLock({ $0 }) { revoke(wiped, .restart) }
            core.withLock { $0.phase = .beforeFirstUnlock }
        }
        emit(.restart)
    }

    /// Verifies the passcode and restores the class keys, unless a lock was asked for
    /// meanwhile: a lock that comes while the passcode is checked (a slow KDF, a TPM that
    /// takes its time, a suspend a moment after the login) is the later event, and wins.
    public func unlock(passcode: SecureBuffer) throws {
        let requestsBefore = core.withReadLock { $0.lockRequests }
        // An unlock of an unlocked device changes nothing a listener must hear of.
        let wasUnlocked = try transition.withLock { _ -> Bool in
            try acceptPasscode(passcode) { keys in
                try core.withLock { core -> LockPhase in
                    guard core.lockRequests == requestsBefore else { throw LockError.lockedMeanwhile }
                    for protectionClass in ProtectionClass.allCases {
                        if let key = keys.key(for: protectionClass) {
                            core.keys.insert(key, for: protectionClass)
                        }
                    }
                    defer { core.phase = .unlocked }
                    core.generation += 1
                    core.lockedFrom = nil
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
    private func acceptPasscode<R>(_ passcode: SecureBuffer, _ body: (borrowing ClassKeySet) throws -> R) throws -> R {
        guard passcode.count > 0 else { throw LockError.emptyPasscode }
        try saveUnsavedFailure()
        let keybag = core.withLock { $0.keybag }
        if keybag.policy.erased && !keybag.passcodeSet { throw LockError.erased }
        guard keybag.passcodeSet else { throw LockError.noPasscode }
        if let wait = keybag.policy.waitRemaining(now: clock.now) { throw LockError.mustWait(wait) }
        let reserved = try countAttempt()
        let adopted = core.withLock { $0.keybag }
        switch try tried(reserved, { try Keybag.unlock(adopted, passcode: passcode, deviceSecret: deviceSecret) }) {
        case .wrongPasscode(let fingerprint):
            try recordFailure(fingerprint: fingerprint, reserved: reserved)
        case .unlocked(let keys):
            #if DPFS_TEST_HOOKS
            testHooks.passcodeChecked?()
            #endif
            var succeeded = adopted
            succeeded.policy.recordSuccess()
            let now = clock.now
            // The count adopted from the record was the device's while the passcode was
            // checked, and a class change then may have saved it: saved again, cleared.
            // Unchanged, only the reservation is cleared, under the commit's lock so that
            // no class change's save puts it back.
            let changed = succeeded.policy != keybag.policy || succeeded.policy != adopted.policy
            try commitKeybag(succeeded, save: changed ? saving(resettingFailures: true) : { [self] _ in try clearReservation() },
                             update: { $0.passcodeEntered = now })
            return try body(keys)
        }
    }

    /// reserveAttempt, keeping in memory the count it adopted, refused or not.
    private func countAttempt() throws -> Int {
        var policy = core.withLock { $0.keybag.policy }
        defer {
            let adopted = policy
            keybagWrites.withLock { _ in core.withLock { $0.keybag.policy = adopted } }
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
        var unsaved = false
        let kept = try commitKeybag(keybag, save: { keybag in
            do { try keybag.save(in: directory, deviceSecret: deviceSecret) } catch {
                // The failure counts all the same, with its delay: kept here, and saved
                // before any passcode is tried again (saveUnsavedFailure), so that a full
                // disk and a restart open no way to more guesses. The save left the
                // generation of the keybag on disk.
                unsaved = true
            }
        }, update: { $0.failureUnsaved = unsaved })
        let attempts = kept.policy.failedAttempts
        let wait = kept.policy.waitRemaining(now: now)
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
        do {
            try commitKeybag(core.withLock { $0.keybag }, save: saving(),
                             update: { $0.failureUnsaved = false })
        } catch {
            throw LockError.failureNotSaved("\(error)")
        }
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
                switch try tried(reserved, { try Keybag.unlock(keybag, passcode: current, deviceSecret: deviceSecret) }) {
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
            let now = clock.now
            let passcodeSet = keybag.passcodeSet
            try commitKeybag(keybag, save: saving(resettingFailures: true),
                             update: { core in
                // The user typed the passcode (the current one, or the first).
                core.passcodeEntered = passcodeSet ? now : nil
                if !passcodeSet { core.phase = .unlocked }
            })
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
