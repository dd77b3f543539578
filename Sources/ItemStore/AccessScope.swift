// Which access groups an app may touch, derived from its entitlements: exact names,
// and `TEAMID.*` wildcards that admit every group with that prefix.
import Foundation

struct AccessScope: Sendable {
    /// The app whose scope this is.
    let bundleID: String
    let exact: [String]
    let prefixes: [String]
    /// Where a new item goes when the caller names no group: the first concrete
    /// group of the list (a wildcard names no single group).
    let defaultGroup: String
    /// The stored form (keyed hashes) of the exact groups, when made with the keys.
    private let hashes: [Data]?

    init(_ entitlements: Entitlements, keys: ItemKeys? = nil) {
        var exact: [String] = []
        var prefixes: [String] = []
        for group in entitlements.accessGroups {
            if group == "*" {
                prefixes.append("")
            } else if group.hasSuffix(".*") {
                prefixes.append(String(group.dropLast()))
            } else {
                exact.append(group)
            }
        }
        self.bundleID = entitlements.bundleID
        self.exact = exact
        self.prefixes = prefixes
        // The application identifier is always in the list, so `exact` is never empty.
        self.defaultGroup = exact.first ?? entitlements.applicationIdentifier
        self.hashes = keys.map { keys in exact.map { keys.attributeHash("accessGroup", $0) } }
    }

    /// Wildcards have no hash: a query compares rows with these, and opens the
    /// sealed group of the others (ItemQuery).
    func exactHashes(_ keys: ItemKeys) -> [Data] {
        hashes ?? exact.map { keys.attributeHash("accessGroup", $0) }
    }

    /// Whether the app may name `group`: a concrete group it is entitled to. A pattern
    /// (`TEAMID.*`) admits groups but is none itself, so naming it is refused.
    func allows(_ group: String) -> Bool {
        guard !group.hasSuffix("*") else { return false }
        return exact.contains(group) || prefixes.contains { group.hasPrefix($0) }
    }
}
