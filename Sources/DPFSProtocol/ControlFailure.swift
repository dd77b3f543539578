// Why the daemon refused a request, beside the message, for the failures a script
// must tell apart (dpfs(1) EXIT STATUS): the message alone is for people.
public enum ControlFailure: String, Codable, Sendable {
    case wrongPasscode
    /// Too many failed attempts (dpfs's delay, or the TPM's dictionary-attack lockout):
    /// no passcode is tried until it has passed.
    case passcodeDelay
    /// The request needs protected data the locked device does not have.
    case deviceLocked
    case erased
}
