// iOS's answer to passcode guessing: escalating delays after failed attempts, the same
// wrong passcode twice in a row counted once, and an optional erase after N failures.
import Foundation

public struct PasscodePolicy: Codable, Sendable, Equatable {
    public var failedAttempts = 0
    /// Fingerprint of the last wrong passcode (a keyed hash of its derived key), so a
    /// repeat of the same typo does not count twice.
    public var lastFailureFingerprint: Bytes?
    /// Unix time before which no attempt is accepted.
    public var retryAfter: Double?
    public var eraseAfter: Int?
    public var erased = false
    /// Set when the failure count was raised to the worst case because keybag.seq
    /// could not vouch for the keybag (KeybagSequence); says why. The right passcode
    /// clears it.
    public var worstCaseReason: String?

    public init(eraseAfter: Int? = nil) { self.eraseAfter = eraseAfter }

    /// The delay iOS imposes after the given number of consecutive failures.
    public static func delay(afterFailures failures: Int) -> TimeInterval {
        switch failures {
        case ..<5: return 0
        case 5: return 60
        case 6: return 5 * 60
        case 7, 8: return 15 * 60
        default: return 60 * 60
        }
    }

    /// Seconds still to wait before an attempt is allowed, or nil.
    public func waitRemaining(now: Date = Date()) -> TimeInterval? {
        guard let retryAfter else { return nil }
        let remaining = retryAfter - now.timeIntervalSince1970
        return remaining > 0 ? remaining : nil
    }

    public enum FailureOutcome: Equatable { case counted, repeated, erase }

    /// Records a failed attempt and imposes the wait the table gives.
    public mutating func recordFailure(fingerprint: [UInt8], now: Date = Date()) -> FailureOutcome {
        if let last = lastFailureFingerprint, last.value == fingerprint { return .repeated }
        failedAttempts += 1
        lastFailureFingerprint = Bytes(fingerprint)
        let delay = Self.delay(afterFailures: failedAttempts)
        retryAfter = delay > 0 ? now.timeIntervalSince1970 + delay : nil
        if let limit = eraseAfter, failedAttempts >= limit { return .erase }
        return .counted
    }

    public mutating func recordSuccess() {
        failedAttempts = 0
        lastFailureFingerprint = nil
        retryAfter = nil
        worstCaseReason = nil
    }

    /// The failure count assumed when the real one may have been rolled back: the
    /// first count of the highest delay tier.
    public static let worstCaseFailures = 9

    /// Puts the policy into its strictest state short of erasing, for a keybag whose
    /// failure count may have been rolled back (dpfs(5)): at least `worstCaseFailures`
    /// failures — but one below --erase-after, so only a further wrong passcode can
    /// erase, never a missing counter file — and that tier's full wait from now.
    public mutating func assumeWorstCase(_ reason: String, now: Date = Date()) {
        var floor = Self.worstCaseFailures
        if let limit = eraseAfter { floor = min(floor, max(limit - 1, 0)) }
        failedAttempts = max(failedAttempts, floor)
        let wait = now.timeIntervalSince1970 + Self.delay(afterFailures: Self.worstCaseFailures)
        retryAfter = max(retryAfter ?? 0, wait)
        worstCaseReason = reason
    }
}

public func describeWait(_ seconds: TimeInterval) -> String {
    let whole = Int(seconds.rounded(.up))
    if whole >= 3600 { return "\(whole / 3600) h \(whole % 3600 / 60) min" }
    if whole >= 60 { return "\(whole / 60) min \(whole % 60) s" }
    return "\(whole) s"
}
