// What `dpfs run` asks of the daemon before it starts a program: the app the program
// is, a socket on which it can act only as that app, and what the program must not
// see (the device directory, the secret store, the owner's socket). The connection
// stays open for the program's life: the daemon ends the session when it closes.
import DPFSProtocol
import DataProtection
import Foundation

struct AppSession {
    let bundleID: String
    /// The app whose container is the mount's root.
    let sandboxApp: String
    let socket: String
    let status: DeviceStatus
    private let connection: ControlClient

    init(mount: String, app: String?, deviceControl: Bool) throws {
        do {
            connection = try DaemonDeadline.client(for: mount)
            guard let own = try connection.send(.appIdentity(bundleID: nil)).app,
                  let status = try connection.send(.status).status else {
                throw CLIError("the daemon of \(mount) did not describe its device")
            }
            let reply = try connection.send(.appSession(bundleID: app, deviceControl: deviceControl))
            guard let bundleID = reply.app, let socket = reply.socket else {
                throw CLIError("the daemon of \(mount) did not open an app session")
            }
            self.sandboxApp = own
            self.status = status
            self.bundleID = bundleID
            self.socket = socket
        } catch let error as ControlClientError {
            throw CLIError(error)
        }
    }

    var isSandboxApp: Bool { bundleID == sandboxApp }

    /// The class another app's new container takes: its own
    /// com.apple.developer.default-data-protection entitlement's, else untilFirstAuth,
    /// as iOS gives every app or extension the default its own entitlement names.
    func containerClass() throws -> ProtectionClass {
        let apps: [ListedApp]
        do {
            guard let listed = try connection.send(.appList).apps else {
                throw CLIError("the daemon did not list the registered apps")
            }
            apps = listed
        } catch let error as ControlClientError {
            throw CLIError(error)
        }
        guard let app = apps.first(where: { $0.bundleID == bundleID }) else {
            throw CLIError("the daemon does not list \(bundleID) among the registered apps")
        }
        guard let name = app.defaultDataProtection else { return .untilFirstAuth }
        guard let named = ProtectionClass(name: name) else {
            throw CLIError("\(bundleID) has an unknown default protection class \(name)")
        }
        return named
    }

    /// Keeps the session open until `body` returns.
    func hold<T>(_ body: () throws -> T) rethrows -> T {
        try withExtendedLifetime(connection, body)
    }
}
