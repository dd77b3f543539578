// What the lock-state manager reports, as `dpfs events` prints it (one JSON line each).
import Foundation

public enum LockPhase: String, Codable, Sendable {
    case beforeFirstUnlock, unlocked, locking, locked
}

public struct DeviceEvent: Codable, Sendable {
    public enum Kind: String, Codable, Sendable {
        case willBecomeUnavailable, didBecomeUnavailable, didBecomeAvailable
        case restart, passcodeChanged, attemptFailed, erased
    }

    public var event: Kind
    public var state: LockPhase
    public var timestamp: String
    public var failedAttempts: Int?

    public init(_ event: Kind, state: LockPhase, failedAttempts: Int? = nil) {
        self.event = event
        self.state = state
        self.failedAttempts = failedAttempts
        self.timestamp = Self.timestampStyle.format(Date())
    }

    /// UTC with milliseconds ("2026-01-02T03:04:05.678Z"). FoundationEssentials' style, not
    /// ISO8601DateFormatter: that one builds an ICU calendar, time zone and locale, which
    /// left 5 MiB of ICU data resident in the daemon after its first event.
    private static let timestampStyle = Date.ISO8601FormatStyle(includingFractionalSeconds: true)
}

/// What `dpfs status` reports.
public struct DeviceStatus: Codable, Sendable {
    public var state: LockPhase
    public var classes: [String: Bool]
    public var passcodeSet: Bool
    public var failedAttempts: Int
    public var retryAfter: Double?
    public var erased: Bool
    public var gracePeriod: Double
    public var defaultProtection: String
    public var deviceDirectory: String
    public var pid: Int32
    /// The inodes the mounted filesystem holds for the kernel (nil before it is mounted).
    public var inodes: Int?
}
