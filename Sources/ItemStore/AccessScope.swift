// Which access groups an app may touch, derived from its entitlements: exact names,
// and `TEAMID.*` wildcards that admit every group with that prefix.

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
}
