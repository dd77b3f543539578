// What `dpfs status` reports of a TPM's dictionary-attack lockout that refused an
// unlock (the tpm2 secret store): the TPM's own counts, and the longest it can last.
public struct TPMLockoutStatus: Codable, Sendable, Equatable {
    /// The TPM's failure counter when the lockout was met.
    public var failures: Int
    /// The failures the TPM allows before its lockout.
    public var maxTries: Int
    /// Seconds after which the TPM forgets one failure (0: it forgets none).
    public var recoveryTime: Int
    /// Seconds, rounded up, within which the lockout ends while the TPM runs; it may
    /// end sooner (the TPM does not tell when its last failure was). Nil: only the
    /// TPM's owner ends it.
    public var retryAfter: Double?

    public init(failures: Int, maxTries: Int, recoveryTime: Int, retryAfter: Double?) {
        self.failures = failures; self.maxTries = maxTries; self.recoveryTime = recoveryTime
        self.retryAfter = retryAfter
    }
}
