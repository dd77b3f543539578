// The simulated user's biometry from test code: enroll a face or finger, re-enroll,
// and queue how the user answers the next prompts — the same requests `dpfs biometry`
// sends. A keychain read of an item behind an access control, or an LAContext's
// evaluatePolicy, takes the next queued answer.
import DPFSProtocol
import Foundation

/// The simulated device's biometry hardware.
public enum SimulatedBiometry: String, Sendable {
    case faceID, touchID

    var wire: BiometryType { self == .faceID ? .faceID : .touchID }
}

/// How the simulated user answers a prompt.
public enum BiometryResponse: String, Sendable {
    /// The enrolled face or finger.
    case match
    /// Another face or finger: a failed match; five in a row lock biometry out until the passcode.
    case nomatch
    /// The user cancels.
    case cancel

    var wire: BiometryAnswer {
        switch self {
        case .match: return .match
        case .nomatch: return .nomatch
        case .cancel: return .cancel
        }
    }
}

/// The simulated user's biometry as the daemon reports it.
public struct BiometryStatus: Sendable, Equatable {
    public let enrolled: Bool
    public let type: SimulatedBiometry
    /// Changes at every enrollment, as LAContext.evaluatedPolicyDomainState does.
    public let domainState: String?
    public let lockedOut: Bool
    public let failedMatches: Int
    /// Answers queued and not yet taken by a prompt.
    public let queuedAnswers: Int
    /// Seconds a prompt waits for an answer before it fails as cancelled.
    public let promptTimeout: Double
    /// Prompts shown or waiting to be: a test answers once its prompt is among them
    /// (nil from a daemon that does not count them).
    public let prompts: Int?
}

extension DeviceControl {
    /// Enrolls a face (or finger); the device must have a passcode, as on iOS.
    public func enrollBiometry(_ type: SimulatedBiometry? = nil) throws {
        try biometry(.enroll(type: type?.wire))
    }

    /// Removes the enrollment: biometric prompts fail, .biometryCurrentSet items are gone for good.
    public func unenrollBiometry() throws {
        try biometry(.unenroll)
    }

    /// A new enrollment: the domain state changes, .biometryCurrentSet items become invalid.
    public func reenrollBiometry(_ type: SimulatedBiometry? = nil) throws {
        try biometry(.reenroll(type: type?.wire))
    }

    /// Queues `times` answers for the next prompts.
    public func respondToBiometry(_ response: BiometryResponse, times: Int = 1) throws {
        try biometry(.respond(answer: response.wire, times: times))
    }

    /// Queues the passcode as the answer to the next `times` prompts (a .devicePasscode
    /// or .userPresence prompt; it also ends a biometry lockout).
    public func respondWithPasscode(_ passcode: DevicePasscode, times: Int = 1) throws {
        try biometry(.respond(answer: .passcode, times: times), secrets: [passcode.secret])
    }

    /// Drops every queued answer, which outlive the process that queued them (a test's setUp).
    public func clearBiometryResponses() throws {
        try biometry(.clearAnswers)
    }

    /// How long a prompt waits for an answer before it fails as cancelled (default 5 s,
    /// at most 9), until the unmount.
    public func setBiometryPromptTimeout(_ seconds: Double) throws {
        try biometry(.promptTimeout(seconds: seconds))
    }

    public var biometry: BiometryStatus {
        get throws {
            let reply = try biometry(.state)
            return BiometryStatus(enrolled: reply.enrolled, type: reply.type == .faceID ? .faceID : .touchID,
                                  domainState: reply.domainState, lockedOut: reply.lockedOut,
                                  failedMatches: reply.failedMatches, queuedAnswers: reply.queued,
                                  promptTimeout: reply.promptTimeout, prompts: reply.prompts)
        }
    }

    @discardableResult
    private func biometry(_ request: BiometryRequest, secrets: [LockedSecret] = []) throws -> BiometryReply {
        guard let reply = try DeviceChannel.send(.biometry(request), to: mountpoint, secrets: secrets).biometry else {
            throw DeviceError.unreachable(mountpoint: mountpoint, reason: "the daemon sent no biometry state")
        }
        return reply
    }
}
