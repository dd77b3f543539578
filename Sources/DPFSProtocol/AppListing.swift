// What `dpfs app list` shows of one registered app: its identity and the keychain
// access groups its entitlements grant.
public struct ListedApp: Codable, Sendable, Equatable {
    public var bundleID: String
    /// Whether it is the sandbox's own app, the one a call that names no app acts as.
    public var own: Bool
    /// In Apple's order: keychain-access-groups, the application identifier, app groups.
    public var accessGroups: [String]
    /// The team and application identifier its entitlements plist states; nil for an
    /// app registered by bundle ID alone, whose team is a placeholder.
    public var teamID: String?
    public var applicationIdentifier: String?
    /// com.apple.developer.default-data-protection, as a class name, when it has one.
    public var defaultDataProtection: String?

    public init(bundleID: String, own: Bool, accessGroups: [String], teamID: String? = nil,
                applicationIdentifier: String? = nil, defaultDataProtection: String? = nil) {
        self.bundleID = bundleID; self.own = own; self.accessGroups = accessGroups
        self.teamID = teamID; self.applicationIdentifier = applicationIdentifier
        self.defaultDataProtection = defaultDataProtection
    }
}
