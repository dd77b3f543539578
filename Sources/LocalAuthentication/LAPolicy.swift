// LocalAuthentication's policies and biometry types, with Apple's raw values.
import DPFSProtocol

public enum LAPolicy: Int, Sendable {
    /// Face ID or Touch ID only.
    case deviceOwnerAuthenticationWithBiometrics = 1
    /// Biometry, or the device passcode.
    case deviceOwnerAuthentication = 2

    var wire: AuthenticationPolicy {
        switch self {
        case .deviceOwnerAuthenticationWithBiometrics: return .biometrics
        case .deviceOwnerAuthentication: return .deviceOwner
        }
    }
}

public enum LABiometryType: Int, Sendable {
    case none = 0
    case touchID = 1
    case faceID = 2
    case opticID = 4

    init(_ type: BiometryType) {
        switch type {
        case .faceID: self = .faceID
        case .touchID: self = .touchID
        }
    }
}

/// LATouchIDAuthenticationMaximumAllowableReuseDuration: five minutes.
public let LATouchIDAuthenticationMaximumAllowableReuseDuration: Double = 300
