// The apps registered with the device (the `apps` table): who may call, and with
// which access groups. The sandbox's own app answers calls that name no app.
import DataProtection
import Foundation
import GRDB

enum AppRegistry {
    static func register(_ app: Entitlements, plist: Data?, isSandboxApp: Bool, in db: Database) throws {
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
        let groupsJSON = String.fromDatabaseValue(row["accessGroups"]) ?? ""
        guard let bundle = String.fromDatabaseValue(row["bundleID"]),
              let team = String.fromDatabaseValue(row["teamID"]),
              let groups = try? JSONDecoder().decode([String].self, from: Data(groupsJSON.utf8)) else {
            throw SecError(SecStatus.decode, "the registration of \(bundleID ?? "the sandbox's app") is damaged")
        }
        let protection = String.fromDatabaseValue(row["defaultDataProtection"]).flatMap { ProtectionClass(name: $0) }
        return Entitlements(teamID: team, bundleID: bundle, accessGroups: groups, defaultDataProtection: protection)
    }
}
