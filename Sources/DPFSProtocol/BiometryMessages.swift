// The simulated user's biometry as control requests and replies carry it: enrolling,
// answering prompts (dpfs biometry, DeviceControl) and LocalAuthentication's calls.
public enum BiometryType: String, Codable, Sendable, CaseIterable {
    case faceID, touchID
}

/// How the simulated user answers the next prompt.
public enum BiometryAnswer: String, Codable, Sendable, CaseIterable {
    /// The enrolled face or finger.
    case match
    /// Another face or finger: a failed match (five in a row lock biometry out).
    case nomatch
    /// The user cancels the prompt.
    case cancel
    /// The user enters the device passcode, which travels as the frame's secret.
    case passcode
}

/// LocalAuthentication's two policies.
public enum AuthenticationPolicy: String, Codable, Sendable {
    /// Biometry only.
    case biometrics
    /// Biometry or the passcode.
    case deviceOwner
}

public enum BiometryRequest: Codable, Sendable {
    /// The state, for LAContext's canEvaluatePolicy, biometryType and domain state.
    case state
    case enroll(type: BiometryType?)
    case unenroll
    /// A new enrollment: the domain state changes and .biometryCurrentSet items become invalid.
    case reenroll(type: BiometryType?)
    /// Queues `times` answers for the next prompts; a passcode answer's passcode is the frame's secret.
    case respond(answer: BiometryAnswer, times: Int)
    /// Drops every queued answer: they outlive the process that queued them.
    case clearAnswers
    /// LAContext.evaluatePolicy: asks the simulated user, remembering a success under `context`.
    /// `reuse` is touchIDAuthenticationAllowableReuseDuration (seconds), which spares
    /// no prompt here (SimulatedUser.evaluate).
    case evaluate(policy: AuthenticationPolicy, context: String, reason: String, reuse: Double, interactive: Bool)
    /// LAContext.invalidate: the daemon forgets the context's evaluations.
    case invalidate(context: String)
    /// How long a prompt waits for an answer, until the unmount (0 < seconds ≤ 9).
    case promptTimeout(seconds: Double)
}

/// Why biometry waits for the passcode (a lockout: biometric prompts fail at once).
public enum BiometryLockout: String, Codable, Sendable {
    /// Five failed matches in a row.
    case failedMatches
    /// The device restarted, and the passcode has not been entered since.
    case restart
    /// The passcode has not been entered for more than 48 hours (device clock).
    case passcodeUnused
}

public struct BiometryReply: Codable, Sendable {
    public var enrolled: Bool
    public var type: BiometryType
    /// Hex; changes at every enrollment; nil when nothing is enrolled.
    public var domainState: String?
    public var lockedOut: Bool
    /// Why, when `lockedOut`.
    public var lockout: BiometryLockout?
    public var failedMatches: Int
    /// Answers waiting for a prompt.
    public var queued: Int
    public var passcodeSet: Bool
    /// For evaluate: the LAError code of a failure (nil: success).
    public var errorCode: Int?
    /// Seconds a prompt waits for an answer before it fails as cancelled.
    public var promptTimeout: Double
    /// Prompts on screen or waiting for it: what a test waits for before it answers.
    /// Optional so that a reply from a daemon that does not count them still decodes.
    public var prompts: Int?

    public init(enrolled: Bool, type: BiometryType, domainState: String?, lockedOut: Bool, lockout: BiometryLockout? = nil,
                failedMatches: Int, queued: Int, passcodeSet: Bool, errorCode: Int? = nil, promptTimeout: Double,
                prompts: Int? = nil) {
        self.enrolled = enrolled; self.type = type; self.domainState = domainState
        self.lockedOut = lockedOut; self.lockout = lockout; self.failedMatches = failedMatches; self.queued = queued
        self.passcodeSet = passcodeSet; self.errorCode = errorCode; self.promptTimeout = promptTimeout
        self.prompts = prompts
    }
}

/// LocalAuthentication's error codes (LAError.Code), with Apple's numbers.
public enum LocalAuthenticationCode {
    public static let authenticationFailed = -1
    public static let userCancel = -2
    public static let userFallback = -3
    public static let systemCancel = -4
    public static let passcodeNotSet = -5
    public static let biometryNotAvailable = -6
    public static let biometryNotEnrolled = -7
    public static let biometryLockout = -8
    public static let appCancel = -9
    public static let invalidContext = -10
    public static let notInteractive = -1004
}
