// dpfs app add: registers another app identity (bundle ID and keychain access groups
// from an Apple-style entitlements plist) with the device, for `keychain --app`.
// dpfs app list: AppListCommand.swift.
import ArgumentParser
import DPFSProtocol
import Foundation
import ItemStore

struct App: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Register app identities whose keychain calls the device answers, and list them.",
        subcommands: [Add.self, List.self])
}

extension App {
    struct Add: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Register an app from its entitlements plist (application-identifier, keychain-access-groups).")
        @Argument(help: "The mountpoint.") var mountpoint: String
        @Option(help: "The app's entitlements plist (XML or binary).") var entitlements: String

        func validate() throws {
            guard FileManager.default.isReadableFile(atPath: entitlements) else {
                throw ValidationError("cannot read \(entitlements)")
            }
        }

        func run() throws {
            guard let plist = FileManager.default.contents(atPath: entitlements) else {
                throw CLIError("cannot read \(entitlements)")
            }
            // Parsed here too, so a bad plist is reported before the daemon is bothered.
            do { _ = try Entitlements(plist: plist) } catch { throw CLIError("\(entitlements): \(error)") }
            let reply = try DaemonDeadline.client(for: mountpoint).send(.appAdd(entitlements: plist))
            if let message = reply.message { print(message) }
        }
    }
}
