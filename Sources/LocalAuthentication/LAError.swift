// LAError with Apple's domain and codes, so that `catch LAError.userCancel`,
// `error.code == .biometryLockout` and `(error as NSError).code == -8` all work as on iOS.
import DPFSProtocol
import Foundation

public let LAErrorDomain = "com.apple.LocalAuthentication"

public struct LAError: Error, CustomNSError, Hashable, Sendable, CustomStringConvertible {
    public enum Code: Int, Sendable {
        case authenticationFailed = -1
        case userCancel = -2
        case userFallback = -3
        case systemCancel = -4
        case passcodeNotSet = -5
        case biometryNotAvailable = -6
        case biometryNotEnrolled = -7
        case biometryLockout = -8
        case appCancel = -9
        case invalidContext = -10
        case companionNotAvailable = -11
        case biometryNotPaired = -12
        case biometryDisconnected = -13
        case invalidDimensions = -14
        case notInteractive = -1004

        public static var touchIDNotAvailable: Code { .biometryNotAvailable }
        public static var touchIDNotEnrolled: Code { .biometryNotEnrolled }
        public static var touchIDLockout: Code { .biometryLockout }
    }

    public let code: Code
    private let message: String

    public init(_ code: Code, _ message: String? = nil) {
        self.code = code
        self.message = message ?? Self.defaultMessage(code)
    }

    /// Apple's initializer; a description in `userInfo` becomes the message.
    public init(_ code: Code, userInfo: [String: Any]) {
        self.init(code, userInfo[NSLocalizedDescriptionKey] as? String)
    }

    public static var errorDomain: String { LAErrorDomain }
    public var errorCode: Int { code.rawValue }
    public var errorUserInfo: [String: Any] { [NSLocalizedDescriptionKey: message] }
    public var localizedDescription: String { message }
    public var description: String { "LAError(\(code.rawValue)): \(message)" }

    /// An NSError of LAErrorDomain, as Apple's calls fill their error pointers with.
    var nsError: NSError { NSError(domain: LAErrorDomain, code: code.rawValue, userInfo: errorUserInfo) }

    public static func == (lhs: LAError, rhs: LAError) -> Bool { lhs.code == rhs.code }
    public func hash(into hasher: inout Hasher) { hasher.combine(code) }

    public static var authenticationFailed: Code { .authenticationFailed }
    public static var userCancel: Code { .userCancel }
    public static var userFallback: Code { .userFallback }
    public static var systemCancel: Code { .systemCancel }
    public static var passcodeNotSet: Code { .passcodeNotSet }
    public static var biometryNotAvailable: Code { .biometryNotAvailable }
    public static var biometryNotEnrolled: Code { .biometryNotEnrolled }
    public static var biometryLockout: Code { .biometryLockout }
    public static var appCancel: Code { .appCancel }
    public static var invalidContext: Code { .invalidContext }
    public static var notInteractive: Code { .notInteractive }
    public static var touchIDNotAvailable: Code { .biometryNotAvailable }
    public static var touchIDNotEnrolled: Code { .biometryNotEnrolled }
    public static var touchIDLockout: Code { .biometryLockout }

    private static func defaultMessage(_ code: Code) -> String {
        switch code {
        case .authenticationFailed: return "Application retry limit exceeded or authentication failed."
        case .userCancel: return "Canceled by user."
        case .userFallback: return "Fallback authentication mechanism selected."
        case .systemCancel: return "Canceled by the system."
        case .passcodeNotSet: return "Passcode not set."
        case .biometryNotAvailable: return "Biometry is not available on this device."
        case .biometryNotEnrolled: return "No identities are enrolled."
        case .biometryLockout: return "Biometry is locked out."
        case .appCancel: return "Canceled by the application."
        case .invalidContext: return "The context has been invalidated."
        case .notInteractive: return "User interaction is required."
        case .companionNotAvailable, .biometryNotPaired, .biometryDisconnected, .invalidDimensions:
            return "Not available on a dpfs device."
        }
    }
}

/// `catch LAError.userCancel`: matches an LAError, or an NSError of LAErrorDomain, with this code.
public func ~= (code: LAError.Code, error: any Error) -> Bool {
    if let error = error as? LAError { return error.code == code }
    let error = error as NSError
    return error.domain == LAErrorDomain && error.code == code.rawValue
}
