// Who is on the other end of a control connection. The owner's socket (the user who
// mounted) may do anything; an app socket, made for one `dpfs run --app X`, acts only
// as X: iOS takes an app's identity from its code signature, never from the call.
// Root, on the owner's socket of another user's daemon, may only ask what `dpfs
// unmount` asks: root may unmount any mount, and must be refused as the owner is
// while programs run in it as apps.
import DPFSProtocol
import ItemStore

public enum ControlScope: Sendable, Equatable {
    case owner
    /// One app; `deviceControl` also allows what a test host does to the device
    /// (lock, unlock, restart, passcode changes, the clock, biometry).
    case app(bundleID: String, deviceControl: Bool)
    /// Root, when the daemon is another user's: the status and the unmount alone.
    case root

    var bundleID: String? {
        if case .app(let bundleID, _) = self { return bundleID }
        return nil
    }

    /// Why this scope may not send `request`, or nil when it may.
    func refusal(of request: ControlRequest) -> String? {
        if self == .root {
            switch request {
            case .status, .unmounting: return nil
            default: return Self.rootRefusal
            }
        }
        guard case .app(let bundleID, let deviceControl) = self else { return nil }
        switch request {
        case .status, .events, .keychain, .secKey:
            return nil
        case .appList:
            return nil  // answered with this app alone (RequestHandler)
        case .appIdentity(let named):
            return named == nil || named == bundleID ? nil : Self.notOtherApp(bundleID, named)
        case .lock, .unlock, .restart, .passcode, .clockAdvance:
            return deviceControl ? nil
                : "\(bundleID) may not control the device; run its tests with `dpfs test --device-control` or `dpfs run --device-control`"
        case .biometry(let request):
            switch request {
            case .state, .evaluate, .invalidate: return nil
            case .enroll, .unenroll, .reenroll, .respond, .clearAnswers, .promptTimeout:
                return deviceControl ? nil
                    : "\(bundleID) may not act as the device's user; run its tests with `dpfs test --device-control` or `dpfs run --device-control`"
            }
        case .appAdd, .appSession:
            return "\(bundleID) runs as an app; only the device's owner may register apps or start app sessions"
        case .keychainExport, .keychainImport:
            return "\(bundleID) runs as an app; only the device's owner may export or import the keychain"
        case .sync:
            return "\(bundleID) runs as an app; only the device's owner manages keychain sync"
        case .unmounting:
            return "\(bundleID) runs as an app; only the device's owner may unmount the sandbox"
        }
    }

    /// The keychain request as this scope may send it: an app's requests act as that
    /// app (an unnamed app is this one); naming another app is refused.
    func scoped(_ request: KeychainRequest) -> ScopedKeychainRequest {
        guard case .app(let bundleID, _) = self else { return .allowed(request) }
        guard request.app == nil || request.app == bundleID else {
            return .refused(KeychainResponse(status: SecStatus.missingEntitlement,
                                             message: Self.notOtherApp(bundleID, request.app)))
        }
        var scoped = request
        scoped.app = bundleID
        return .allowed(scoped)
    }

    /// The key request as this scope may send it, by the same rule as keychain requests.
    func scoped(_ request: KeyRequest) -> Result<KeyRequest, KeyRefusal> {
        guard case .app(let bundleID, _) = self else { return .success(request) }
        guard request.app == nil || request.app == bundleID else {
            return .failure(KeyRefusal(response: KeyResponse(status: SecStatus.missingEntitlement,
                                                             message: Self.notOtherApp(bundleID, request.app))))
        }
        var scoped = request
        scoped.app = bundleID
        return .success(scoped)
    }

    static let rootRefusal = "permission denied: this dpfs daemon serves only the user who mounted it "
        + "(root may see its status and unmount it)"

    private static func notOtherApp(_ bundleID: String, _ other: String?) -> String {
        "this process runs as \(bundleID) and cannot act as \(other ?? "another app")"
    }
}

enum ScopedKeychainRequest {
    case allowed(KeychainRequest)
    case refused(KeychainResponse)
}

struct KeyRefusal: Error {
    let response: KeyResponse
}
