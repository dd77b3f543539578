// Which access groups an app may touch, derived from its entitlements: exact names,
// and `TEAMID.*` wildcards that admit every group with that prefix.
import GRDB

struct AccessScope: Sendable {
    let exact: [String]
    let prefixes: [String]
    /// Where a new item goes when the caller names no group: the first concrete
    /// group of the list (a wildcard names no single group).
    let defaultGroup: String

    init(_ entitlements: Entitlements) {
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
        self.exact = exact
        self.prefixes = prefixes
        // The application identifier is always in the list, so `exact` is never empty.
        self.defaultGroup = exact.first ?? entitlements.applicationIdentifier
    }

    func allows(_ group: String) -> Bool {
        exact.contains(group) || prefixes.contains { group.hasPrefix($0) }
    }

    /// A WHERE term restricting `accessGroup` to this scope.
    func sqlCondition() -> (String, [any DatabaseValueConvertible]) {
        var terms: [String] = []
        var arguments: [any DatabaseValueConvertible] = []
        if !exact.isEmpty {
            terms.append("accessGroup IN (" + Array(repeating: "?", count: exact.count).joined(separator: ",") + ")")
            arguments += exact
        }
        for prefix in prefixes {
            // substr, not LIKE: group names may contain % and _.
            terms.append("substr(accessGroup, 1, ?) = ?")
            arguments += [prefix.unicodeScalars.count, prefix]  // substr counts code points
        }
        return ("(" + terms.joined(separator: " OR ") + ")", arguments)
    }
}
