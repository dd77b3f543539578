// Items behind a SecAccessControl: reading their data (or changing them) asks the
// device's simulated user (SimulatedUser) first, unless the caller's LAContext has
// already proved what the item asks. Adding one asks nothing, as on iOS; neither do
// attribute-only finds and deletes. A Secure Enclave key asks at each use of its
// private key instead (ItemStore+Keys), through the same path.
import DataProtection
import DPFSProtocol
import Foundation

/// An item's access control as sealed in its attributes: the flags, and for
/// .biometryCurrentSet the domain state of the enrollment it was stored under.
struct StoredAccessControl: Sendable, Equatable {
    var flags: AccessControlFlags
    var boundDomain: String?

    var pairs: [(String, String)] {
        [("accessControl", String(flags.rawValue))] + (boundDomain.map { [("accessControlDomain", $0)] } ?? [])
    }

    /// nil for an item without access control.
    init?(_ values: [String: String]) throws {
        guard let raw = values["accessControl"] else { return nil }
        guard let number = UInt(raw) else { throw ItemRecord.unreadable }
        flags = AccessControlFlags(rawValue: number)
        boundDomain = values["accessControlDomain"]
    }

    init(flags: AccessControlFlags, boundDomain: String?) {
        self.flags = flags; self.boundDomain = boundDomain
    }

    var requirement: AccessRequirement { AccessRequirement(flags) }
}

extension ItemStore {
    /// The access control a new or changed item stores. A .biometryCurrentSet item is
    /// bound to the enrollment of now; with nothing enrolled there is no set to bind,
    /// and the add fails with errSecAuthFailed.
    /// Refuses a combination Apple refuses, unless `made` is false: an item put back
    /// from a backup keeps the flags it was made with, perhaps before dpfs refused them.
    func bind(_ flags: AccessControlFlags, made: Bool = true) throws -> StoredAccessControl {
        if made, let problem = flags.problem { throw SecError(SecStatus.param, problem) }
        guard flags.contains(.biometryCurrentSet) else { return StoredAccessControl(flags: flags, boundDomain: nil) }
        guard let domain = user.domainState else {
            throw SecError(SecStatus.authFailed, "no biometry is enrolled to bind a .biometryCurrentSet item to")
        }
        return StoredAccessControl(flags: flags, boundDomain: domain)
    }

    /// The items the caller may go on with. With `skipping`, .biometryCurrentSet items
    /// of an enrollment that is gone are left out, and under kSecUseAuthenticationUISkip
    /// so is every item not granted without asking, whatever stands in the way (a
    /// prompt, no enrollment, a lockout, no passcode): Apple skips such items silently.
    /// Any other refusal fails the call with its OSStatus (errSecAuthFailed,
    /// errSecUserCanceled, errSecInteractionNotAllowed).
    /// A Secure Enclave key item asks nothing here: its item holds no secret the app
    /// gets, and each use of the key asks instead (authorizeKeyUse), as on iOS.
    @discardableResult
    func authorize(_ items: [StoredItem], _ request: KeychainRequest, skipping: Bool) throws -> [StoredItem] {
        let authentication = request.authentication ?? KeychainAuthentication()
        var allowed: [StoredItem] = []
        for item in items {
            let gate = try item.record.map(AccessGate.init) ?? ItemRecord.gate(opening: item, keys: keys)
            guard let accessControl = gate.accessControl, accessControl.requirement.asksUser, !gate.isEnclaveKey else {
                allowed.append(item)
                continue
            }
            let outcome = ask(accessControl, authentication)
            switch outcome {
            case .granted:
                allowed.append(item)
            case _ where skipping && authentication.interaction == .skip,
                 .invalidated where skipping:
                continue
            case .systemCancelled:
                // A restart ended the prompt: an item whose class key it wiped fails as any such item does.
                try checkAvailable([item])
                throw SecError(outcome.secStatus, Self.explanation(outcome))
            default:
                throw SecError(outcome.secStatus, Self.explanation(outcome))
            }
        }
        return allowed
    }

    /// A private-key operation of a Secure Enclave key made with `accessControl`:
    /// asks the simulated user as reading a protected item's data does, and throws
    /// the same OSStatus, except that a key whose .biometryCurrentSet enrollment is
    /// gone fails with errSecAuthFailed (its item is still found, as on iOS, where the
    /// enclave refuses the operation). .privateKeyUsage alone asks nothing.
    func authorizeKeyUse(_ accessControl: StoredAccessControl?, _ authentication: KeychainAuthentication?) throws {
        guard let accessControl, accessControl.requirement.asksUser else { return }
        var authentication = authentication ?? KeychainAuthentication()
        // Skip leaves items out of a find; a key operation has nothing to leave out.
        if authentication.interaction == .skip { authentication.interaction = .fail }
        let outcome = ask(accessControl, authentication)
        switch outcome {
        case .granted: return
        case .invalidated: throw SecError(SecStatus.authFailed, Self.explanation(outcome))
        default: throw SecError(outcome.secStatus, Self.explanation(outcome))
        }
    }

    /// The one way the item store asks the simulated user: a context token that could
    /// be guessed counts as none.
    private func ask(_ accessControl: StoredAccessControl, _ authentication: KeychainAuthentication) -> AuthorizationOutcome {
        let context = authentication.context.flatMap { KeychainAuthentication.isValidToken($0) ? $0 : nil }
        return user.authorize(accessControl.requirement, boundDomain: accessControl.boundDomain, context: context,
                              interaction: authentication.interaction)
    }

    private static func explanation(_ outcome: AuthorizationOutcome) -> String {
        switch outcome {
        case .granted: return "granted"
        case .failed: return "the simulated user failed to authenticate (dpfs biometry respond)"
        case .cancelled: return "the simulated user cancelled, or no answer was queued in time (dpfs biometry respond)"
        case .appCancelled: return "the LAContext was invalidated while its prompt was waiting"
        case .systemCancelled: return "a restart ended the prompt before the user answered"
        case .contextInvalidated: return "the LAContext given as kSecUseAuthenticationContext was invalidated"
        case .notInteractive: return "the item needs the user's authentication, and the call forbids asking"
        case .invalidated: return "the item or key was bound to a biometry enrollment that is gone (dpfs biometry reenroll)"
        case .lockedOut:
            return "biometry is locked out (five failed matches, a restart, or 48 hours without the passcode); enter the passcode"
        case .notEnrolled: return "no biometry is enrolled (dpfs biometry enroll)"
        case .passcodeNotSet: return "the device has no passcode"
        }
    }
}
