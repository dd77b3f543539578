// A TPM's dictionary-attack lockout as the TPM tells it (TPM2_PT_LOCKOUT_COUNTER,
// TPM2_PT_MAX_AUTH_FAIL, TPM2_PT_LOCKOUT_INTERVAL). The TPM forgets one failure per
// recovery time it runs, counted from the last failure, and does not say when that
// was: from now, the lockout ends within one recovery time per failure at or over
// the limit, and may end sooner. A TPM that is powered off does not count.
import DPFSProtocol
import Foundation

public struct TPMLockout: Sendable, Equatable, CustomStringConvertible {
    /// The failures the TPM counts now.
    public var counter: Int
    /// The failures it allows before the lockout.
    public var maxTries: Int
    /// Seconds after which it forgets one failure; 0: it forgets none.
    public var recoveryTime: Int

    public init(counter: Int, maxTries: Int, recoveryTime: Int) {
        self.counter = counter; self.maxTries = maxTries; self.recoveryTime = recoveryTime
    }

    /// The longest the lockout can last from now while the TPM runs; nil when it only
    /// ends by its owner's reset (a recovery time of 0).
    public var endsWithin: TimeInterval? {
        guard recoveryTime > 0 else { return nil }
        return TimeInterval(max(counter - maxTries + 1, 1) * recoveryTime)
    }

    public var description: String {
        let state = "the TPM's dictionary-attack lockout is in force (\(counter) failed authorization"
            + "\(counter == 1 ? "" : "s"), \(maxTries) allowed): no passcode was tried"
        guard let endsWithin else { return state + "; it ends only when the TPM's owner resets it" }
        return state + "; it ends within \(describeWait(endsWithin)) of the TPM running, maybe sooner "
            + "(the TPM forgets one failure every \(describeWait(TimeInterval(recoveryTime))))"
    }

    /// What `dpfs status` shows of it, `seen` seconds after it was seen.
    func status(seenAgo seen: TimeInterval) -> TPMLockoutStatus {
        TPMLockoutStatus(failures: counter, maxTries: maxTries, recoveryTime: recoveryTime,
                         retryAfter: endsWithin.map { max($0 - seen, 0).rounded(.up) })
    }
}
