// What an access control (an item's SecAccessControl, or an LAPolicy) asks of the
// user, and what the user has proved so far.
import DPFSProtocol

public struct AccessRequirement: Sendable, Equatable {
    public enum Factor: Sendable, Hashable {
        /// .userPresence: biometry (any enrollment) or the passcode.
        case presence
        case biometryAny
        /// Biometry of the enrollment the item was stored under.
        case biometryCurrentSet
        case passcode
    }

    public let factors: [Factor]
    /// .or: one factor is enough; otherwise (.and, or a single constraint) all are needed.
    public let anyOne: Bool

    public init(factors: [Factor], anyOne: Bool) {
        self.factors = factors; self.anyOne = anyOne
    }

    public init(_ flags: AccessControlFlags) {
        var factors: [Factor] = []
        if flags.contains(.userPresence) { factors.append(.presence) }
        if flags.contains(.biometryAny) { factors.append(.biometryAny) }
        if flags.contains(.biometryCurrentSet) { factors.append(.biometryCurrentSet) }
        if flags.contains(.devicePasscode) { factors.append(.passcode) }
        self.init(factors: factors, anyOne: flags.contains(.or))
    }

    public init(_ policy: AuthenticationPolicy) {
        switch policy {
        case .biometrics: self.init(factors: [.biometryAny], anyOne: false)
        case .deviceOwner: self.init(factors: [.presence], anyOne: false)
        }
    }

    public var asksUser: Bool { !factors.isEmpty }
}

/// What the user proved in one context: a biometric match (under which enrollment) and/or the passcode.
struct AuthenticationProof: Sendable, Equatable {
    var biometryDomain: String?
    var passcode = false

    func satisfies(_ factor: AccessRequirement.Factor, boundDomain: String?) -> Bool {
        switch factor {
        case .presence: return biometryDomain != nil || passcode
        case .biometryAny: return biometryDomain != nil
        case .biometryCurrentSet: return biometryDomain != nil && biometryDomain == boundDomain
        case .passcode: return passcode
        }
    }

    func satisfies(_ requirement: AccessRequirement, boundDomain: String?) -> Bool {
        let met = requirement.factors.map { satisfies($0, boundDomain: boundDomain) }
        return requirement.anyOne ? met.contains(true) : !met.contains(false)
    }

    /// This proof with its match left out unless the match was of `enrollment` (the
    /// domain state enrolled now): a face or finger no longer enrolled proves nothing,
    /// whatever it was stored under.
    func keepingMatch(of enrollment: String?) -> AuthenticationProof {
        var kept = self
        if biometryDomain != enrollment { kept.biometryDomain = nil }
        return kept
    }

    mutating func merge(_ other: AuthenticationProof) {
        if other.biometryDomain != nil { biometryDomain = other.biometryDomain }
        passcode = passcode || other.passcode
    }
}

/// How asking the user ended.
public enum AuthorizationOutcome: Sendable, Equatable {
    case granted
    /// A failed match, a wrong passcode, or an answer the prompt could not take.
    case failed
    /// The user cancelled, or no answer came before the prompt's time ran out.
    case cancelled
    /// The app invalidated the LAContext while its prompt was on screen or waiting.
    case appCancelled
    /// A restart ended the prompt before the user answered.
    case systemCancelled
    /// The LAContext given was invalidated: it authorizes nothing, and asks for nothing.
    case contextInvalidated
    /// The user would have to be asked, and the caller said not to (kSecUseAuthenticationUIFail, Skip).
    case notInteractive
    /// A .biometryCurrentSet constraint bound to an enrollment that is gone.
    case invalidated
    case lockedOut
    case notEnrolled
    case passcodeNotSet

    /// The OSStatus SecItem answers for it.
    public var secStatus: Int32 {
        switch self {
        case .granted: return SecStatus.success
        case .cancelled, .appCancelled, .systemCancelled: return SecStatus.userCanceled
        case .notInteractive: return SecStatus.interactionNotAllowed
        case .invalidated: return SecStatus.itemNotFound
        case .failed, .lockedOut, .notEnrolled, .passcodeNotSet, .contextInvalidated: return SecStatus.authFailed
        }
    }

    /// The LAError code LAContext answers for it; nil for success.
    public var localAuthenticationCode: Int? {
        switch self {
        case .granted: return nil
        case .failed, .invalidated: return LocalAuthenticationCode.authenticationFailed
        case .cancelled: return LocalAuthenticationCode.userCancel
        case .appCancelled: return LocalAuthenticationCode.appCancel
        case .systemCancelled: return LocalAuthenticationCode.systemCancel
        case .contextInvalidated: return LocalAuthenticationCode.invalidContext
        case .notInteractive: return LocalAuthenticationCode.notInteractive
        case .lockedOut: return LocalAuthenticationCode.biometryLockout
        case .notEnrolled: return LocalAuthenticationCode.biometryNotEnrolled
        case .passcodeNotSet: return LocalAuthenticationCode.passcodeNotSet
        }
    }
}

extension AuthorizationOutcome {
    init(_ end: PromptEnd) {
        switch end {
        case .restart: self = .systemCancelled
        case .appCancel: self = .appCancelled
        }
    }
}
