// kSecUseAuthenticationUI, kSecUseNoAuthenticationUI, kSecUseOperationPrompt and
// kSecUseAuthenticationContext read into what a request carries: the same words in a
// SecItem query and in SecKeyCreateRandomKey's parameters.
import DPFSProtocol

enum AuthenticationOption {
    static func handles(_ key: String) -> Bool {
        key == kSecUseAuthenticationUI || key == kSecUseOperationPrompt || key == kSecUseAuthenticationContext
            || key == kSecUseNoAuthenticationUI
    }

    /// Applies one of those keys; false for a value Apple would refuse (errSecParam).
    static func apply(_ key: String, _ value: Any, to options: inout KeychainAuthentication) -> Bool {
        switch key {
        case kSecUseAuthenticationUI:
            switch value as? String {
            case kSecUseAuthenticationUIAllow?: options.interaction = .allow
            case kSecUseAuthenticationUIFail?: options.interaction = .fail
            case kSecUseAuthenticationUISkip?: options.interaction = .skip
            default: return false
            }
        case kSecUseNoAuthenticationUI:
            guard let flag = value as? Bool else { return false }
            if flag { options.interaction = .fail }
        case kSecUseOperationPrompt:
            guard let prompt = value as? String else { return false }
            options.prompt = prompt
        case kSecUseAuthenticationContext:
            guard let context = value as? AuthenticationContextToken else { return false }
            options.context = context.dpfsAuthenticationToken
        default:
            return false
        }
        return true
    }
}
