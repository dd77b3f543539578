// dpfs app list: the apps the device knows, the sandbox's own marked, with the keychain
// access groups each may reach. From an app's own session it lists that app alone.
import ArgumentParser
import DPFSProtocol
import Foundation

extension App {
    struct List: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "List the registered apps, the sandbox's own marked, with their keychain access groups.")
        @Argument(help: "The mountpoint.") var mountpoint: String
        @Flag(help: "Print JSON.") var json = false

        /// What --json prints.
        struct Output: Encodable {
            let apps: [ListedApp]
        }

        func run() throws {
            let apps = try JSONFailure.reported(if: json) {
                guard let listed = try DaemonDeadline.send(.appList, to: mountpoint).apps else {
                    throw CLIError("the daemon sent no list of apps")
                }
                return listed
            }
            if json { return try printJSON(Output(apps: apps)) }
            for line in Self.lines(apps) { print(line) }
        }

        /// One line per app, in columns: bundle ID, "(own)" for the sandbox's own app,
        /// the team its entitlements state (blank without a plist), its access groups.
        static func lines(_ apps: [ListedApp]) -> [String] {
            let bundleWidth = apps.map(\.bundleID.count).max() ?? 0
            let markWidth = apps.contains(where: \.own) ? "(own)".count : 0
            let teamWidth = apps.compactMap { $0.teamID.map { "team \($0)".count } }.max() ?? 0
            return apps.map { app in
                let cells = [
                    padded(app.bundleID, bundleWidth),
                    padded(app.own ? "(own)" : "", markWidth),
                    padded(app.teamID.map { "team \($0)" } ?? "", teamWidth),
                    "groups " + app.accessGroups.joined(separator: ", "),
                ]
                return cells.filter { !$0.isEmpty }.joined(separator: "  ")
            }
        }

        private static func padded(_ text: String, _ width: Int) -> String {
            text + String(repeating: " ", count: max(0, width - text.count))
        }
    }
}
