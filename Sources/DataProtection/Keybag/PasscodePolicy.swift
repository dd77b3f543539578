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

    /// Seconds still to wait before an attempt is allowed, or nil. Never more than the
    /// failure count's whole delay: a wait set while the clock read later than it does
    /// now (a test's `dpfs clock advance`, undone at the next mount; a clock set back)
    /// would otherwise last as much longer as the clock went back.
    public func waitRemaining(now: Date = Date()) -> TimeInterval? {
        guard let retryAfter else { return nil }
        let remaining = min(retryAfter - now.timeIntervalSince1970, Self.delay(afterFailures: failedAttempts))
        return remaining > 0 ? remaining : nil
    }

    /// Brings a wait set while the clock read later than it does now within the failure
    /// count's whole delay from now, so that it runs down from here (waitRemaining alone
    /// would hold it at that length).
    public mutating func clampWait(now: Date = Date()) {
        guard let retryAfter else { return }
        self.retryAfter = min(retryAfter, now.timeIntervalSince1970 + Self.delay(afterFailures: failedAttempts))
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

    /// Takes a higher failure count from the device's record in the secret store
    /// (the keybag was saved one generation behind it): that count's wait runs from
    /// now, as if the failure had just been made. Returns whether anything changed.
    public mutating func adoptRecordedFailures(_ recorded: Int, now: Date = Date()) -> Bool {
        guard recorded > failedAttempts else { return false }
        failedAttempts = recorded
        let delay = Self.delay(afterFailures: recorded)
        if delay > 0 { retryAfter = max(retryAfter ?? 0, now.timeIntervalSince1970 + delay) }
        return true
    }

    public mutating func recordSuccess() {
        failedAttempts = 0
        lastFailureFingerprint = nil
        retryAfter = nil
    }
}

public func describeWait(_ seconds: TimeInterval) -> String {
    let whole = Int(seconds.rounded(.up))
    if whole >= 3600 { return "\(whole / 3600) h \(whole % 3600 / 60) min" }
    if whole >= 60 { return "\(whole / 60) min \(whole % 60) s" }
    return "\(whole) s"
}
