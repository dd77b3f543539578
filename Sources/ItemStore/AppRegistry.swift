// The apps registered with the device (the `apps` table): who may call, and with
// which access groups. The sandbox's own app answers calls that name no app.
import DataProtection
import Foundation
import GRDB

enum AppRegistry {
    static func register(_ app: Entitlements, plist: Data?, isSandboxApp: Bool, in db: Database) throws {
        try checkApplicationGroups(of: app, in: db)
        let groups = String(decoding: try JSONEncoder().encode(app.accessGroups), as: UTF8.self)
        if isSandboxApp {
            try db.execute(sql: "UPDATE apps SET isSandboxApp = 0")
        }
        try db.execute(sql: """
            INSERT INTO apps (bundleID, teamID, accessGroups, defaultDataProtection, isSandboxApp, entitlements)
            VALUES (?, ?, ?, ?, ?, ?)
            ON CONFLICT(bundleID) DO UPDATE SET teamID = excluded.teamID, accessGroups = excluded.accessGroups,
                defaultDataProtection = excluded.defaultDataProtection,
                isSandboxApp = max(isSandboxApp, excluded.isSandboxApp), entitlements = excluded.entitlements
            """, arguments: [app.bundleID, app.teamID, groups, app.defaultDataProtection?.name, isSandboxApp, plist])
    }

    /// An application group belongs to the team whose app first registered it, as
    /// Apple's developer portal gives each group identifier to one team: an app of
    /// another team naming it would reach that team's shared items.
    private static func checkApplicationGroups(of app: Entitlements, in db: Database) throws {
        let appGroups = Set(app.accessGroups.filter { $0.hasPrefix("group.") })
        guard !appGroups.isEmpty else { return }
        let rows = try Row.fetchAll(db, sql: "SELECT bundleID, teamID, accessGroups FROM apps WHERE bundleID != ? AND teamID != ?",
                                    arguments: [app.bundleID, app.teamID])
        for row in rows {
            let json = String.fromDatabaseValue(row["accessGroups"]) ?? "[]"
            let groups = (try? JSONDecoder().decode([String].self, from: Data(json.utf8))) ?? []
            if let shared = groups.first(where: appGroups.contains) {
                let owner = String.fromDatabaseValue(row["teamID"]) ?? "?"
                let bundle = String.fromDatabaseValue(row["bundleID"]) ?? "?"
                throw EntitlementsError("application group \(shared) belongs to team \(owner) (app \(bundle)), not \(app.teamID)")
            }
        }
    }

    /// The calling app; an app that was never registered holds no keychain
    /// entitlement at all, which Apple reports as errSecMissingEntitlement.
    static func caller(_ bundleID: String?, in db: Database) throws -> Entitlements {
        let row: Row?
        if let bundleID {
            row = try Row.fetchOne(db.cachedStatement(sql: "SELECT * FROM apps WHERE bundleID = ?"), arguments: [bundleID])
        } else {
            row = try Row.fetchOne(db.cachedStatement(sql: "SELECT * FROM apps WHERE isSandboxApp = 1"))
        }
        guard let row else {
            throw SecError(SecStatus.missingEntitlement,
                           bundleID.map { "no app \($0) is registered (dpfs app add)" } ?? "the sandbox has no registered app")
        }
        return try entitlements(of: row, named: bundleID ?? "the sandbox's app")
    }

    /// Every registered app (only `bundleID` when given), the sandbox's own first.
    static func listed(only bundleID: String?, in db: Database) throws -> [ListedApp] {
        let rows: [Row]
        if let bundleID {
            rows = try Row.fetchAll(db, sql: "SELECT * FROM apps WHERE bundleID = ?", arguments: [bundleID])
        } else {
            rows = try Row.fetchAll(db, sql: "SELECT * FROM apps ORDER BY isSandboxApp DESC, bundleID")
        }
        return try rows.map { row in
            let app = try entitlements(of: row, named: String.fromDatabaseValue(row["bundleID"]) ?? "an app")
            // Without a plist the team is the placeholder, which no signature states.
            let stated = Data.fromDatabaseValue(row["entitlements"]) != nil
            return ListedApp(bundleID: app.bundleID, own: Bool.fromDatabaseValue(row["isSandboxApp"]) ?? false,
                             accessGroups: app.accessGroups, teamID: stated ? app.teamID : nil,
                             applicationIdentifier: stated ? app.applicationIdentifier : nil,
                             defaultDataProtection: app.defaultDataProtection?.name)
        }
    }

    private static func entitlements(of row: Row, named name: String) throws -> Entitlements {
        let groupsJSON = String.fromDatabaseValue(row["accessGroups"]) ?? ""
        guard let bundle = String.fromDatabaseValue(row["bundleID"]),
              let team = String.fromDatabaseValue(row["teamID"]),
              let groups = try? JSONDecoder().decode([String].self, from: Data(groupsJSON.utf8)) else {
            throw SecError(SecStatus.decode, "the registration of \(name) is damaged")
        }
        let protection = String.fromDatabaseValue(row["defaultDataProtection"]).flatMap { ProtectionClass(name: $0) }
        return Entitlements(teamID: team, bundleID: bundle, accessGroups: groups, defaultDataProtection: protection)
    }
}
