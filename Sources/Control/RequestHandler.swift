// Turns one control request into calls on the lock-state manager or the item store.
import DataProtection
import Foundation
import ItemStore
import KeychainSync

struct RequestHandler {
    let device: LockStateManager
    let items: ItemStore
    var scope: ControlScope = .owner
    var sync: SyncEngine?
    /// The lock that follows the login session, where the daemon has one.
    var lockFollowing: (@Sendable () -> LockFollowing)?
    /// The processes that hold app sessions open, where the daemon serves them.
    var appRuns: AppRuns?
    /// Whether the client that sent the request has hung up (a sync command then drops).
    var requesterGone: () -> Bool = { false }

    func handle(_ request: ControlRequest, secrets: [SecureBuffer]) -> ControlReply {
        do {
            switch request {
            case .status:
                var status = device.status()
                status.sync = sync?.statusLine
                status.app = sandboxApp()
                // Not an app's: it learns nothing of the user's login sessions or of
                // the programs that run as apps.
                if scope.bundleID == nil { status.lockOn = lockFollowing?() }
                var reply = ControlReply(ok: true, status: status)
                if scope.bundleID == nil { reply.runs = appRuns?.current() }
                return reply
            case .lock(let now):
                let locks = device.lock(now: now)
                let message = locks ? nil : "no passcode is set: protected data stays available"
                return ControlReply(ok: true, message: message, status: device.status())
            case .unlock:
                guard let passcode = secrets.first else { return .failure("no passcode was sent") }
                try device.unlock(passcode: passcode)
                items.user.passcodeEntered()
                return ControlReply(ok: true, status: device.status())
            case .restart:
                device.restart()
                return ControlReply(ok: true, status: device.status())
            case .clockAdvance(let seconds):
                guard seconds.isFinite, seconds > 0, seconds <= 100 * 365 * 86400 else {
                    return .failure("the clock moves forward only, by up to a hundred years")
                }
                device.advanceClock(by: seconds)
                return ControlReply(ok: true, status: device.status())
            case .passcode(let action):
                try changePasscode(action, secrets: secrets)
                return ControlReply(ok: true, status: device.status())
            case .keychain(let asked):
                var keychainRequest: KeychainRequest
                switch scope.scoped(asked) {
                case .allowed(let request): keychainRequest = request
                case .refused(let refusal): return ControlReply(ok: false, keychain: refusal)
                }
                if let data = secrets.first {
                    guard secrets.count == 1, keychainRequest.data == nil, keychainRequest.newData == nil else {
                        return .failure("malformed request: the item data was sent twice")
                    }
                    guard keychainRequest.operation == .add || keychainRequest.operation == .update else {
                        return .failure("malformed request: \(keychainRequest.operation.rawValue) takes no item data")
                    }
                    // Sealed from the locked memory the secret section was read into: the
                    // data never reaches the daemon's heap on its way in.
                    let response = items.perform(keychainRequest, secret: data.bytes)
                    return ControlReply(ok: response.status == 0, keychain: response)
                }
                let response = items.perform(keychainRequest)
                return ControlReply(ok: response.status == 0, keychain: response)
            case .secKey(let asked):
                switch scope.scoped(asked) {
                case .success(let request):
                    let response = items.performKey(request)
                    var reply = ControlReply(ok: response.status == 0)
                    reply.key = response
                    return reply
                case .failure(let refusal):
                    var reply = ControlReply(ok: false)
                    reply.key = refusal.response
                    return reply
                }
            case .appAdd(let entitlements):
                let bundleID = try items.registerApp(entitlements: entitlements)
                return ControlReply(ok: true, message: "registered \(bundleID)")
            case .appIdentity(let bundleID):
                return appIdentity(bundleID ?? scope.bundleID)
            case .appList:
                // An app is only itself, as on iOS: it does not learn which others exist.
                var reply = ControlReply(ok: true)
                reply.apps = try items.listedApps(only: scope.bundleID)
                return reply
            case .biometry(let request):
                return try handleBiometry(request, secrets: secrets)
            case .keychainImport(let attributes):
                guard secrets.count == 1 else { return .failure("malformed request: an imported item's data is its one secret") }
                let response = items.importItem(attributes, data: secrets[0].bytes)
                return ControlReply(ok: response.status == 0, keychain: response)
            case .sync(let command):
                guard let sync else { return .failure("this daemon runs no keychain sync") }
                let (message, report) = try sync.perform(command, requesterGone: requesterGone)
                var reply = ControlReply(ok: true, message: message)
                reply.sync = report
                return reply
            case .events, .appSession, .keychainExport, .unmounting:
                return .failure("events, app sessions, keychain exports and unmounts each need a connection of their own")
            }
        } catch let error as BiometryError {
            return .failure("\(error)")
        } catch let error as LockError {
            return .failure("\(error)", ControlFailure(error))
        } catch {
            return .failure("\(error)")
        }
    }

    private func appIdentity(_ bundleID: String?) -> ControlReply {
        guard let app = try? items.entitlements(of: bundleID) else {
            return .failure(bundleID.map { "no app \($0) is registered with this device (dpfs app add)" }
                            ?? "the sandbox has no registered app")
        }
        var reply = ControlReply(ok: true)
        reply.app = app.bundleID
        return reply
    }

    /// The sandbox's own app, for the owner and for that app's own socket; nil for
    /// another app's, which does not learn other apps' identities.
    private func sandboxApp() -> String? {
        guard let own = try? items.sandboxAppBundleID() else { return nil }
        return scope.bundleID == nil || scope.bundleID == own ? own : nil
    }

    private func changePasscode(_ action: PasscodeAction, secrets: [SecureBuffer]) throws {
        switch action {
        case .set:
            guard secrets.count == 1 else { throw FrameError.malformed("passcode set needs the new passcode") }
            guard !device.status().passcodeSet else { throw LockError.passcodeAlreadySet }
            try device.changePasscode(current: nil, new: secrets[0])
        case .change:
            guard secrets.count == 2 else { throw FrameError.malformed("passcode change needs the old and new passcodes") }
            try device.changePasscode(current: secrets[0], new: secrets[1])
        case .remove:
            guard secrets.count == 1 else { throw FrameError.malformed("passcode remove needs the current passcode") }
            try device.changePasscode(current: secrets[0], new: nil)
        }
    }
}

extension ControlFailure {
    init?(_ error: LockError) {
        switch error {
        case .wrongPasscode: self = .wrongPasscode
        case .mustWait, .tpmLockout: self = .passcodeDelay
        case .unavailable: self = .deviceLocked
        case .erased: self = .erased
        case .noPasscode, .passcodeAlreadySet, .failureNotSaved, .emptyPasscode, .lockedMeanwhile: return nil
        }
    }
}
