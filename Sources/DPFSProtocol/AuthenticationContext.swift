// What ties an LAContext to a keychain call across modules that do not import each
// other: LocalAuthentication's LAContext conforms, Security reads the token of the
// object given as kSecUseAuthenticationContext and sends it with the request.
public protocol AuthenticationContextToken: AnyObject, Sendable {
    /// The context's random name at the daemon, under which its successful
    /// evaluations are remembered until it is invalidated.
    var dpfsAuthenticationToken: String { get }
    /// LAContext.interactionNotAllowed as it is now: a keychain call given the context
    /// then fails rather than asks (errSecInteractionNotAllowed).
    var dpfsInteractionNotAllowed: Bool { get }
}

/// kSecUseAuthenticationUI and friends, as a keychain request carries them.
public struct KeychainAuthentication: Codable, Sendable, Equatable {
    public enum Interaction: String, Codable, Sendable {
        /// Ask the simulated user when an item's access control requires it.
        case allow
        /// kSecUseAuthenticationUIFail: errSecInteractionNotAllowed instead of asking.
        case fail
        /// kSecUseAuthenticationUISkip: items that would need asking are left out.
        case skip
    }

    public var interaction: Interaction
    /// kSecUseOperationPrompt, shown to the simulated user (the daemon logs nothing of it).
    public var prompt: String?
    /// kSecUseAuthenticationContext's token (AuthenticationContextToken).
    public var context: String?

    public init(interaction: Interaction = .allow, prompt: String? = nil, context: String? = nil) {
        self.interaction = interaction; self.prompt = prompt; self.context = context
    }

    /// A context token is 32 hex digits (128 random bits): anything shorter could be guessed.
    public static func isValidToken(_ token: String) -> Bool {
        token.utf8.count == 32 && token.utf8.allSatisfy { (48...57).contains($0) || (97...102).contains($0) }
    }
}
