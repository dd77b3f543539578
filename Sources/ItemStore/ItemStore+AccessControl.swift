// Items behind a SecAccessControl: reading their data (or changing them) asks the
// device's simulated user (SimulatedUser) first, unless the caller's LAContext has
// already proved what the item asks. Adding one asks nothing, as on iOS; neither do
// attribute-only finds and deletes.
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
    func bind(_ flags: AccessControlFlags) throws -> StoredAccessControl {
        guard flags.contains(.biometryCurrentSet) else { return StoredAccessControl(flags: flags, boundDomain: nil) }
        guard let domain = user.domainState else {
            throw SecError(SecStatus.authFailed, "no biometry is enrolled to bind a .biometryCurrentSet item to")
        }
        return StoredAccessControl(flags: flags, boundDomain: domain)
    }

    /// The items the caller may go on with. With `skipping`, items that would need
    /// asking under kSecUseAuthenticationUISkip, and .biometryCurrentSet items of an
    /// enrollment that is gone, are left out; any other refusal fails the call with
    /// its OSStatus (errSecAuthFailed, errSecUserCanceled, errSecInteractionNotAllowed).
    @discardableResult
    func authorize(_ items: [StoredItem], _ request: KeychainRequest, skipping: Bool) throws -> [StoredItem] {
        var authentication = request.authentication ?? KeychainAuthentication()
        if let token = authentication.context, !KeychainAuthentication.isValidToken(token) { authentication.context = nil }
        var allowed: [StoredItem] = []
        for var item in items {
            let record = try record(of: item)
            item.record = record
            guard let accessControl = record.accessControl, accessControl.requirement.asksUser else {
                allowed.append(item)
                continue
            }
            let outcome = user.authorize(accessControl.requirement, boundDomain: accessControl.boundDomain,
                                         context: authentication.context,
                                         interaction: authentication.interaction)
            switch outcome {
            case .granted:
                allowed.append(item)
            case .notInteractive where skipping && authentication.interaction == .skip,
                 .invalidated where skipping:
                continue
            default:
                throw SecError(outcome.secStatus, Self.explanation(outcome))
            }
        }
        return allowed
    }

    private static func explanation(_ outcome: AuthorizationOutcome) -> String {
        switch outcome {
        case .granted: return "granted"
        case .failed: return "the simulated user failed to authenticate (dpfs biometry respond)"
        case .cancelled: return "the simulated user cancelled, or no answer was queued in time (dpfs biometry respond)"
        case .notInteractive: return "the item needs the user's authentication, and the call forbids asking"
        case .invalidated: return "the item was bound to a biometry enrollment that is gone"
        case .lockedOut: return "biometry is locked out after too many failed matches; enter the passcode"
        case .notEnrolled: return "no biometry is enrolled (dpfs biometry enroll)"
        case .passcodeNotSet: return "the device has no passcode"
        }
    }
}
