// kSecUseAuthenticationUI, kSecUseNoAuthenticationUI, kSecUseOperationPrompt and
// kSecUseAuthenticationContext read into what a request carries: the same words in a
// SecItem query and in SecKeyCreateRandomKey's parameters.
import DPFSProtocol

/// The authentication keys of one call, or of a key that keeps them for its operations:
/// the options as given, and the LAContext given, whose interactionNotAllowed is read
/// each time a request is sent, as Apple reads the context's at the call.
struct CallAuthentication {
    var options = KeychainAuthentication()
    var context: (any AuthenticationContextToken)?

    /// What a request carries now. A context that forbids interaction makes a call that
    /// would ask fail instead (errSecInteractionNotAllowed): Apple's replacement for
    /// kSecUseAuthenticationUIFail, which it overrides even when the query says Allow.
    /// Skip stays Skip: it already asks nobody.
    var request: KeychainAuthentication {
        var carried = options
        if carried.interaction == .allow, context?.dpfsInteractionNotAllowed == true { carried.interaction = .fail }
        return carried
    }
}

enum AuthenticationOption {
    static func handles(_ key: String) -> Bool {
        key == kSecUseAuthenticationUI || key == kSecUseOperationPrompt || key == kSecUseAuthenticationContext
            || key == kSecUseNoAuthenticationUI
    }

    /// Applies one of those keys; false for a value Apple would refuse (errSecParam).
    static func apply(_ key: String, _ value: Any, to call: inout CallAuthentication) -> Bool {
        switch key {
        case kSecUseAuthenticationUI:
            switch value as? String {
            case kSecUseAuthenticationUIAllow?: call.options.interaction = .allow
            case kSecUseAuthenticationUIFail?: call.options.interaction = .fail
            case kSecUseAuthenticationUISkip?: call.options.interaction = .skip
            default: return false
            }
        case kSecUseNoAuthenticationUI:
            guard let flag = value as? Bool else { return false }
            if flag { call.options.interaction = .fail }
        case kSecUseOperationPrompt:
            guard let prompt = value as? String else { return false }
            call.options.prompt = prompt
        case kSecUseAuthenticationContext:
            guard let context = value as? AuthenticationContextToken else { return false }
            call.options.context = context.dpfsAuthenticationToken
            call.context = context
        default:
            return false
        }
        return true
    }
}
