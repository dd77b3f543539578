// An app's identity as Apple's code signature states it: the entitlements plist
// (XML or binary, read by PropertyListSerialization) with `application-identifier`,
// `keychain-access-groups` (entries may end in `.*`), optional app groups and
// `com.apple.developer.default-data-protection`.
import DataProtection
import Foundation

public struct EntitlementsError: Error, CustomStringConvertible {
    public let description: String
    init(_ description: String) { self.description = description }
}

public struct Entitlements: Sendable, Equatable {
    public static let placeholderTeamID = "XXXXXXXXXX"
    public static let placeholderBundleID = "com.example.app"

    public var teamID: String
    public var bundleID: String
    /// Apple's keychain access-group list, in Apple's order: keychain-access-groups,
    /// then the application identifier, then app groups, each group once (a
    /// keychain-access-groups that lists the application identifier keeps its place
    /// there). Entries may be wildcards.
    public var accessGroups: [String]
    public var defaultDataProtection: ProtectionClass?

    public var applicationIdentifier: String { teamID + "." + bundleID }

    /// The identity of an app registered without a plist: its application
    /// identifier is its only group.
    public init(bundleID: String, teamID: String = Entitlements.placeholderTeamID) {
        self.teamID = teamID
        self.bundleID = bundleID
        self.accessGroups = [teamID + "." + bundleID]
        self.defaultDataProtection = nil
    }

    init(teamID: String, bundleID: String, accessGroups: [String], defaultDataProtection: ProtectionClass?) {
        self.teamID = teamID
        self.bundleID = bundleID
        // Also for a registration stored before groups were made unique.
        var seen: Set<String> = []
        self.accessGroups = accessGroups.filter { seen.insert($0).inserted }
        self.defaultDataProtection = defaultDataProtection
    }

    /// Reads a plist. `bundleID`, when given, must agree with the plist; it also
    /// completes a plist that names only the team (as Xcode's source files do).
    public init(plist data: Data, bundleID expectedBundleID: String? = nil) throws {
        let object: Any
        do {
            object = try PropertyListSerialization.propertyList(from: data, options: [], format: nil)
        } catch {
            throw EntitlementsError("the entitlements are not a property list")
        }
        guard let plist = object as? [String: Any] else {
            throw EntitlementsError("the entitlements plist is not a dictionary")
        }
        let (team, bundle) = try Self.identity(plist, expectedBundleID: expectedBundleID)
        let prefix = team + "."
        // Xcode's source entitlements spell the team prefix as a build setting.
        func expand(_ group: String) -> String {
            group.replacingOccurrences(of: "$(AppIdentifierPrefix)", with: prefix)
                .replacingOccurrences(of: "$(TeamIdentifierPrefix)", with: prefix)
        }
        let keychainGroups = try Self.strings(plist, "keychain-access-groups").map(expand)
        for group in keychainGroups where !group.hasPrefix(prefix) {
            // A signature can only grant its own team's groups; without this check one
            // registered app could claim another team's items.
            throw EntitlementsError("keychain access group \(group) does not belong to team \(team)")
        }
        let appGroups = try Self.strings(plist, "com.apple.security.application-groups")
        for group in appGroups where !group.hasPrefix("group.") {
            throw EntitlementsError("application group \(group) does not start with group.")
        }
        for group in appGroups where group.contains("*") {
            // Apple grants application groups by exact name only; a wildcard here would
            // reach every app group on the device.
            throw EntitlementsError("application group \(group) is a wildcard; application groups are named exactly")
        }
        var protection: ProtectionClass?
        if let value = plist["com.apple.developer.default-data-protection"] {
            guard let name = value as? String, let parsed = ProtectionClass(name: name) else {
                throw EntitlementsError("com.apple.developer.default-data-protection is not a protection class")
            }
            protection = parsed
        }
        self.init(teamID: team, bundleID: bundle,
                  accessGroups: keychainGroups + [prefix + bundle] + appGroups,
                  defaultDataProtection: protection)
    }

    private static func identity(_ plist: [String: Any], expectedBundleID: String?) throws -> (String, String) {
        let declaredTeam = plist["com.apple.developer.team-identifier"] as? String
        guard let appID = plist["application-identifier"] as? String else {
            guard let team = declaredTeam, let bundle = expectedBundleID else {
                throw EntitlementsError("the entitlements have no application-identifier (TEAMID.bundle.id)")
            }
            return try (validTeam(team), bundle)
        }
        guard let dot = appID.firstIndex(of: "."), dot != appID.startIndex, appID.index(after: dot) != appID.endIndex else {
            throw EntitlementsError("application-identifier \(appID) is not of the form TEAMID.bundle.id")
        }
        let team = try validTeam(String(appID[..<dot]))
        let bundle = String(appID[appID.index(after: dot)...])
        if let declaredTeam, declaredTeam != team {
            throw EntitlementsError("com.apple.developer.team-identifier \(declaredTeam) disagrees with application-identifier \(appID)")
        }
        if let expectedBundleID, expectedBundleID != bundle {
            throw EntitlementsError("the entitlements are for \(bundle), not \(expectedBundleID)")
        }
        return (team, bundle)
    }

    private static func validTeam(_ team: String) throws -> String {
        guard !team.isEmpty, team.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber) }) else {
            throw EntitlementsError("team identifier \(team) is not alphanumeric")
        }
        return team
    }

    private static func strings(_ plist: [String: Any], _ key: String) throws -> [String] {
        guard let value = plist[key] else { return [] }
        guard let list = value as? [Any] else { throw EntitlementsError("\(key) is not an array") }
        return try list.map { entry in
            guard let text = entry as? String, !text.isEmpty else {
                throw EntitlementsError("\(key) holds something that is not a group name")
            }
            return text
        }
    }
}
