// The app sockets one owner connection has opened (`dpfs run` holds that connection
// for its program's life). Each is a listener beside the owner's socket, named after
// it (PID.app-UUID.sock, so a dead daemon's leftovers are found by the same pid), on
// which every request acts as one app. They end when the connection does.
import DPFSProtocol
import Foundation
import Glibc

struct AppSessions {
    private var listeners: [(fd: Int32, path: String)] = []

    mutating func open(for bundleID: String?, deviceControl: Bool, server: ControlServer) -> ControlReply {
        guard let app = try? server.items.entitlements(of: bundleID) else {
            return .failure(bundleID.map { "no app \($0) is registered with this device (dpfs app add)" }
                            ?? "the sandbox has no registered app")
        }
        let path = String(server.socketPath.dropLast(".sock".count)) + ".app-\(UUID().uuidString).sock"
        let listener: Int32
        do { listener = try ControlServer.listen(at: path) } catch { return .failure("\(error)") }
        do {
            try server.accept(on: listener, scope: .app(bundleID: app.bundleID, deviceControl: deviceControl))
        } catch {
            unlink(path)
            close(listener)
            return .failure("cannot open an app session: \(error)")
        }
        listeners.append((listener, path))
        var reply = ControlReply(ok: true)
        reply.app = app.bundleID
        reply.socket = path
        return reply
    }

    /// Stops accepting on every socket (the accept threads close them); connections
    /// already made go on until their apps hang up.
    func end() {
        for listener in listeners {
            unlink(listener.path)
            shutdown(listener.fd, Int32(SHUT_RDWR))
        }
    }
}
