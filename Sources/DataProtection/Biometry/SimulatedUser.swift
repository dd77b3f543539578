// The person holding the simulated iPhone, as far as biometry and passcode prompts
// go. Tests enroll a face or finger, queue answers (match, nomatch, cancel, the
// passcode), and every prompt — a keychain read of an item behind an access control,
// LAContext.evaluatePolicy — takes the next one. With none queued a prompt waits up to
// `promptTimeout`, then fails as a cancelled prompt does. One prompt is on screen at a
// time, as on iOS. Biometry is locked out, as iOS locks it, until the passcode is
// entered (an unlock, or a passcode answer): after five failed matches in a row, after
// a restart, and when the passcode has not been entered for more than 48 hours. A
// restart also ends every LAContext's proofs and the last match, ends every prompt at
// once without taking an answer, and drops the queued answers. Queued answers otherwise
// wait until taken, cleared or the mount ends, whoever queued them. Invalidating an
// LAContext ends its prompts at once, and it never again proves anything. Removing the
// passcode removes the enrollment, as iOS does.
import DPFSProtocol
import Foundation
import Synchronization

public enum BiometryError: Error, CustomStringConvertible, Equatable {
    case passcodeNotSet
    case notEnrolled
    case tooManyAnswers
    case badAnswer(String)

    public var description: String {
        switch self {
        case .passcodeNotSet: return "the device has no passcode: as on iOS, biometry is enrolled only on a device with a passcode (dpfs passcode set)"
        case .notEnrolled: return "no biometry is enrolled (dpfs biometry enroll)"
        case .tooManyAnswers: return "too many answers queued (at most \(AnswerQueue.capacity))"
        case .badAnswer(let why): return why
        }
    }
}

public final class SimulatedUser: Sendable {
    /// How long a prompt waits for an answer: long enough for a test to answer from
    /// another thread, short enough to stay below a SecItem call's 10 s time limit.
    public static let defaultPromptTimeout: Double = 5
    /// A SecItem call gives up after 10 s: a longer wait would outlive the caller.
    public static let maximumPromptTimeout: Double = 9
    public static let lockoutThreshold = 5
    /// After this long without the passcode (device clock), biometry waits for it.
    public static let passcodeInterval: TimeInterval = 48 * 3600

    let device: LockStateManager
    private let timeout: Mutex<Double>
    private let record: Mutex<BiometryRecord>
    private let answers = AnswerQueue()
    /// LAContexts by token (128 random bits only its process knows): their proofs
    /// until invalidated, a restart or the end of the mount, and which were invalidated.
    private let contexts = Mutex(ContextBook())
    private let observerID = Mutex<UInt64?>(nil)
    /// Told on a call's thread before it may wait for an answer (up to the prompt
    /// timeout), so that a pool of threads serving calls puts another in its place.
    private let waiting = LateCallback<Void>()
    /// Why biometry.json was read as nothing enrolled at mount, if it was: damaged, or
    /// not the file last written (put back from an older copy, or edited).
    public let recordProblem: String?

    public init(device: LockStateManager, promptTimeout: Double = SimulatedUser.defaultPromptTimeout) {
        self.device = device
        self.timeout = Mutex(promptTimeout)
        let recorded = Result { try device.recordedBiometryDigest() }
        let (loaded, standing) = BiometryRecord.load(from: device.directory, recordedDigest: try? recorded.get())
        switch (recorded, standing) {
        case (.failure, _):
            record = Mutex(BiometryRecord())
            recordProblem = "the device's record in its secret store cannot be read"
        case (_, .damaged):
            record = Mutex(loaded)
            recordProblem = "biometry.json is damaged"
        case (_, .notRecorded):
            record = Mutex(loaded)
            recordProblem = "biometry.json is not the one last written (put back from an older copy, or edited)"
        case (.success(let digest), .sound):
            record = Mutex(loaded)
            recordProblem = nil
            // A device enrolled before digests were recorded: this file is the one to vouch for.
            if digest == nil, loaded != BiometryRecord(), let bytes = try? loaded.encoded() {
                try? device.recordBiometryDigest(BiometryRecord.digest(of: bytes))
            }
        }
        let id = device.observe { [weak self] event in
            guard let self else { return }
            switch event.event {
            case .passcodeChanged where !self.device.passcodeSet: try? self.unenroll()
            case .didBecomeAvailable: self.passcodeEntered()
            case .restart:
                self.forgetProofs()
                self.answers.restart()
            case .erased: try? self.unenroll()
            default: break
            }
        }
        observerID.withLock { $0 = id }
    }

    deinit {
        if let id = observerID.withLock({ $0 }) { device.stopObserving(id) }
        answers.removeAll()
    }

    /// Has `handler` told on a call's thread before it may wait for the user's answer.
    public func onWaitingForAnswer(_ handler: @escaping @Sendable () -> Void) {
        waiting.set(handler)
    }

    /// How long a prompt waits for an answer (all prompts on screen and waiting share it).
    public var promptTimeout: Double { timeout.withLock { $0 } }

    /// Changes the prompt timeout until the unmount.
    public func setPromptTimeout(_ seconds: Double) throws {
        guard seconds.isFinite, seconds > 0, seconds <= Self.maximumPromptTimeout else {
            throw BiometryError.badAnswer("the prompt timeout is more than 0 and at most \(Int(Self.maximumPromptTimeout)) seconds")
        }
        timeout.withLock { $0 = seconds }
    }

    // MARK: Enrollment

    public func state(errorCode: Int? = nil) -> BiometryReply {
        let current = record.withLock { $0 }
        let lockout = lockout(current)
        return BiometryReply(enrolled: current.enrolled, type: current.type, domainState: current.domainState,
                             lockedOut: lockout != nil, lockout: lockout,
                             failedMatches: current.failedMatches, queued: answers.count,
                             passcodeSet: device.passcodeSet, errorCode: errorCode, promptTimeout: promptTimeout,
                             prompts: answers.promptCount)
    }

    /// The current enrollment's domain state, which a .biometryCurrentSet item binds at add.
    public var domainState: String? { record.withLock { $0.domainState } }

    /// Enrolls a face or finger. Enrolling again changes nothing (unless the type
    /// changes, which is a new enrollment); `reenroll` replaces the enrollment.
    public func enroll(type: BiometryType?) throws {
        guard device.passcodeSet else { throw BiometryError.passcodeNotSet }
        try change { record in
            if record.enrolled && (type == nil || type == record.type) { return }
            record.enrolled = true
            record.type = type ?? record.type
            record.domainState = BiometryRecord.newDomainState()
            record.failedMatches = 0
        }
    }

    public func reenroll(type: BiometryType?) throws {
        guard device.passcodeSet else { throw BiometryError.passcodeNotSet }
        try change { record in
            record.enrolled = true
            record.type = type ?? record.type
            record.domainState = BiometryRecord.newDomainState()
            record.failedMatches = 0
        }
    }

    public func unenroll() throws {
        try change { record in
            record.enrolled = false
            record.domainState = nil
            record.failedMatches = 0
        }
    }

    /// The passcode was entered (an unlock): biometry is no longer locked out.
    public func passcodeEntered() {
        try? change { $0.failedMatches = 0 }
    }

    /// A restart: what the user proved before it to an LAContext
    /// counts no more (on iOS no process outlives the reboot).
    private func forgetProofs() {
        contexts.withLock { $0.forgetProofs() }
    }

    /// Why biometry waits for the passcode now, or nil when a match may answer.
    private func lockout(_ record: BiometryRecord) -> BiometryLockout? {
        if record.failedMatches >= Self.lockoutThreshold { return .failedMatches }
        guard device.passcodeSet else { return nil }
        guard let entered = device.passcodeLastEntered else { return .restart }
        return device.clock.now.timeIntervalSince(entered) > Self.passcodeInterval ? .passcodeUnused : nil
    }

    private func change(_ body: (inout BiometryRecord) -> Void) throws {
        try record.withLock { record in
            var changed = record
            body(&changed)
            guard changed != record else { return }
            let bytes = try changed.encoded()
            // The record first: a crash between the two leaves a file it does not vouch
            // for, read as nothing enrolled, which fails closed.
            try device.recordBiometryDigest(BiometryRecord.digest(of: bytes))
            try changed.save(bytes, in: device.directory)
            record = changed
        }
    }

    // MARK: Answers

    /// Queues `times` answers. A passcode answer keeps the passcode in its locked
    /// buffer, one for all its copies, freed (and zeroed) once the last one is taken.
    public func respond(_ answer: BiometryAnswer, times: Int, passcode: SecureBuffer?) throws {
        guard (1...AnswerQueue.capacity).contains(times) else {
            throw BiometryError.badAnswer("--times must be from 1 to \(AnswerQueue.capacity)")
        }
        let queued: QueuedAnswer
        switch answer {
        case .match: queued = .match
        case .nomatch: queued = .nomatch
        case .cancel: queued = .cancel
        case .passcode:
            guard let passcode else { throw BiometryError.badAnswer("a passcode answer needs the passcode") }
            // Checked at the prompt, it would count as a failed attempt.
            guard passcode.count > 0 else { throw BiometryError.badAnswer("the passcode answer is empty") }
            queued = .passcode(passcode)
        }
        guard answers.append(queued, times: times) else { throw BiometryError.tooManyAnswers }
    }

    /// Drops every queued answer, wiping a passcode answer's buffer: answers outlive the
    /// test that queued them, and one that failed before its prompts would otherwise
    /// leave them to answer the next test's.
    public func clearAnswers() {
        answers.removeAll()
    }

    // MARK: Prompts

    /// Whether `requirement` is met, asking the user if need be. `boundDomain` is the
    /// domain state a .biometryCurrentSet item was stored under; `context` names an
    /// LAContext whose earlier successes count, and which remembers this one.
    public func authorize(_ requirement: AccessRequirement, boundDomain: String?, context: String?,
                          interaction: KeychainAuthentication.Interaction) -> AuthorizationOutcome {
        guard requirement.asksUser else { return .granted }
        let key = context
        // Taken first: a restart from here on ends this prompt.
        let restarts = answers.restartCount
        let (known, invalidated) = key.map { key in contexts.withLock { ($0.proof(of: key), $0.isInvalidated(key)) } }
            ?? (nil, false)
        // An invalidated context is no authentication at all, and cannot become one.
        if invalidated { return interaction == .allow ? .contextInvalidated : .notInteractive }
        // A context's match counts only while its enrollment is the current one: after a
        // re-enrollment it opens neither what was bound to the old one nor anything else.
        var proof = (known ?? AuthenticationProof()).keepingMatch(of: domainState)
        if proof.satisfies(requirement, boundDomain: boundDomain) { return .granted }
        if let refusal = impossibility(requirement, boundDomain: boundDomain, proof: proof) { return refusal }
        guard interaction == .allow else { return .notInteractive }
        waiting()
        let cancelled = { key.map { key in self.contexts.withLock { $0.isInvalidated(key) } } ?? false }
        // One deadline for the wait behind another prompt and for the answer, so a
        // call never waits longer than the prompt timeout in all.
        let deadline = Date().addingTimeInterval(promptTimeout)
        switch answers.takeScreen(before: deadline, since: restarts, unless: cancelled) {
        case .got: break
        case .timedOut: return .cancelled
        case .ended(let end): return AuthorizationOutcome(end)
        }
        defer { answers.leaveScreen() }
        while !proof.satisfies(requirement, boundDomain: boundDomain) {
            // The state may have changed while another prompt was on screen.
            if let refusal = impossibility(requirement, boundDomain: boundDomain, proof: proof) { return refusal }
            let pending = requirement.factors.filter { !proof.satisfies($0, boundDomain: boundDomain) }
            let answer: QueuedAnswer
            switch answers.next(before: deadline, since: restarts, unless: cancelled) {
            case .got(let next): answer = next
            case .timedOut: return .cancelled
            case .ended(let end): return AuthorizationOutcome(end)
            }
            switch answer {
            case .cancel:
                return .cancelled
            case .match:
                guard let domain = usableDomain(for: pending, boundDomain: boundDomain) else { return .failed }
                try? change { $0.failedMatches = 0 }
                proof.biometryDomain = domain
            case .nomatch:
                if usableDomain(for: pending, boundDomain: boundDomain) != nil {
                    try? change { $0.failedMatches += 1 }
                }
                return .failed
            case .passcode(let passcode):
                guard pending.contains(where: { $0 == .passcode || $0 == .presence }), verify(passcode) else { return .failed }
                proof.passcode = true
            }
        }
        if let key {
            // Invalidated while the answer was checked: the match proves nothing to it.
            let invalidatedNow = contexts.withLock { book -> Bool in
                book.remember(proof, for: key)
                return book.isInvalidated(key)
            }
            if invalidatedNow { return .appCancelled }
        }
        return .granted
    }

    /// LAContext.evaluatePolicy: a success is remembered under the context. `reuse`
    /// (touchIDAuthenticationAllowableReuseDuration) spares nothing: Apple applies it
    /// to a device unlock by Touch ID only, never to a match inside an app, and
    /// nothing unlocks this device by biometry.
    public func evaluate(_ policy: AuthenticationPolicy, context: String, reuse: Double,
                         interactive: Bool) -> AuthorizationOutcome {
        if contexts.withLock({ $0.isInvalidated(context) }) { return .contextInvalidated }
        return authorize(AccessRequirement(policy), boundDomain: nil, context: context, interaction: interactive ? .allow : .fail)
    }

    /// LAContext.invalidate: its prompts end at once, and it never again proves anything.
    public func invalidate(context: String) {
        contexts.withLock { $0.invalidate(context) }
        answers.wakePrompts()
    }

    /// Why no answer could meet the requirement, or nil when one could.
    private func impossibility(_ requirement: AccessRequirement, boundDomain: String?,
                               proof: AuthenticationProof) -> AuthorizationOutcome? {
        let pending = requirement.factors.filter { !proof.satisfies($0, boundDomain: boundDomain) }
        let reasons = pending.map { reason(against: $0, boundDomain: boundDomain) }
        if requirement.anyOne {
            return reasons.contains(where: { $0 == nil }) ? nil : reasons.compactMap { $0 }.first
        }
        return reasons.compactMap { $0 }.first
    }

    /// Why `factor` cannot be met now, or nil when an answer could meet it.
    private func reason(against factor: AccessRequirement.Factor, boundDomain: String?) -> AuthorizationOutcome? {
        let current = record.withLock { $0 }
        let lockedOut = lockout(current) != nil
        switch factor {
        case .passcode:
            return device.passcodeSet ? nil : .passcodeNotSet
        case .presence:
            if device.passcodeSet { return nil }
            return .passcodeNotSet
        case .biometryAny:
            if !device.passcodeSet { return .passcodeNotSet }
            if !current.enrolled { return .notEnrolled }
            return lockedOut ? .lockedOut : nil
        case .biometryCurrentSet:
            if boundDomain == nil || current.domainState != boundDomain { return .invalidated }
            return lockedOut ? .lockedOut : nil
        }
    }

    /// The enrollment a match now proves, if biometry can meet one of `pending`.
    private func usableDomain(for pending: [AccessRequirement.Factor], boundDomain: String?) -> String? {
        let current = record.withLock { $0 }
        guard current.enrolled, lockout(current) == nil, let domain = current.domainState else {
            return nil
        }
        let usable = pending.contains { factor in
            switch factor {
            case .presence, .biometryAny: return true
            case .biometryCurrentSet: return boundDomain == domain
            case .passcode: return false
            }
        }
        return usable ? domain : nil
    }

    /// Checks a passcode answer as the device's unlock does, without unlocking it: a
    /// wrong one counts as a failed passcode attempt, a right one ends a biometry lockout.
    private func verify(_ passcode: SecureBuffer) -> Bool {
        do {
            try device.verifyPasscode(passcode)
        } catch {
            return false
        }
        passcodeEntered()
        return true
    }
}
