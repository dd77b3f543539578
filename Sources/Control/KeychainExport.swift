// keychainExport's replies (dpfs backup): the registered apps, then every item that
// may leave the device, one frame each with the item's data as its secret (straight
// from the store's locked memory to the socket), then a last frame with neither. A
// failure (a class key gone because the device locked) ends the stream with an error
// reply; the client then has no end frame and discards what it got.
import DataProtection
import DPFSProtocol
import Foundation
import ItemStore

enum KeychainExport {
    static func stream(_ items: ItemStore, device: LockStateManager, to fd: Int32) {
        do {
            for app in try items.registeredApps() {
                var reply = ControlReply(ok: true)
                reply.app = app.bundleID
                reply.entitlements = app.entitlements
                reply.sandboxApp = app.isSandboxApp
                try ServerFrame(body: ControlCoding.encode(reply)).write(to: fd)
            }
            try items.exportMigratableItems { attributes, data in
                let reply = ControlReply(ok: true, keychain: KeychainResponse(status: 0, items: [.init(attributes: attributes)]))
                let secret = SecureBuffer(copying: data)
                try ServerFrame(body: ControlCoding.encode(reply), secrets: [secret]).write(to: fd)
            }
            try ServerFrame(body: ControlCoding.encode(ControlReply(ok: true, message: "end of export"))).write(to: fd)
        } catch let error as ItemExportError {
            let locked = error.status == SecStatus.interactionNotAllowed
            send(.failure("the keychain cannot be exported: \(error)", locked ? .deviceLocked : nil), to: fd)
        } catch {
            send(.failure("the keychain cannot be exported: \(error)"), to: fd)
        }
    }

    private static func send(_ reply: ControlReply, to fd: Int32) {
        guard let body = try? ControlCoding.encode(reply) else { return }
        try? ServerFrame(body: body).write(to: fd)
    }
}
