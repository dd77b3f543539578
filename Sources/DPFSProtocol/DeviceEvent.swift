// What the lock-state manager reports, as `dpfs events` prints it (one JSON line each).
import Foundation
import Glibc

public enum LockPhase: String, Codable, Sendable {
    case beforeFirstUnlock, unlocked, locking, locked
}

public struct DeviceEvent: Codable, Sendable {
    public enum Kind: String, Codable, Sendable {
        case willBecomeUnavailable, didBecomeUnavailable, didBecomeAvailable
        case restart, passcodeChanged, attemptFailed, erased
        /// The device stayed locked for the user-inactive period: completeWhenUserInactive
        /// is unavailable until the next unlock (iOS tells apps nothing of it).
        case userInactiveExpired
    }

    public var event: Kind
    public var state: LockPhase
    public var timestamp: String
    public var failedAttempts: Int?

    public init(_ event: Kind, state: LockPhase, failedAttempts: Int? = nil) {
        self.event = event
        self.state = state
        self.failedAttempts = failedAttempts
        self.timestamp = Self.utcTimestamp()
    }

    /// Now in UTC with milliseconds ("2026-01-02T03:04:05.678Z"), from the C library:
    /// Foundation's formatters (ISO8601DateFormatter, even Date.ISO8601FormatStyle through
    /// its GMT time zone) load ICU's calendar, zone and locale data into the daemon, several
    /// MiB resident after its first event.
    public static func utcTimestamp() -> String {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        var seconds = now.tv_sec
        var parts = tm()
        gmtime_r(&seconds, &parts)
        func padded(_ value: Int, _ width: Int) -> String {
            let digits = String(value)
            return String(repeating: "0", count: max(0, width - digits.count)) + digits
        }
        return "\(padded(Int(parts.tm_year) + 1900, 4))-\(padded(Int(parts.tm_mon) + 1, 2))-\(padded(Int(parts.tm_mday), 2))"
            + "T\(padded(Int(parts.tm_hour), 2)):\(padded(Int(parts.tm_min), 2)):\(padded(Int(parts.tm_sec), 2))"
            + ".\(padded(now.tv_nsec / 1_000_000, 3))Z"
    }
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
    /// Where the device secret lives ("file:DIR" or "tpm2:TCTI").
    public var secretStore: String?
    /// The inodes the mounted filesystem holds for the kernel (nil before it is mounted).
    public var inodes: Int?
    /// The daemon's dpfs version.
    public var version: String? = DPFSVersion.current
    /// Seconds the device's clock was moved forward (`dpfs clock advance`), if at all.
    public var clockAdvanced: Double?
    /// How the kernel's requests come: "/dev/fuse" or "io_uring" (nil before the mount).
    public var transport: String?
    /// Hours locked after which the device restarts (nil: never).
    public var inactivityRebootHours: Double?
    /// Hours locked after which completeWhenUserInactive's key goes, until the next unlock.
    public var userInactivePeriodHours: Double?
    /// Keychain sync's connection ("connected", "server unreachable", …); nil: not in an account.
    public var sync: String?
    /// The sandbox's own app's bundle ID (nil on another app's socket: an app does not
    /// learn other apps' identities).
    public var app: String?
    /// The lock that follows the login session (mount --lock-on); nil: none was asked for.
    public var lockOn: LockFollowing?
    /// The TPM's dictionary-attack lockout an unlock met, until it can have ended; nil: none.
    public var tpmLockout: TPMLockoutStatus?

    public init(state: LockPhase, classes: [String: Bool], passcodeSet: Bool, failedAttempts: Int,
                retryAfter: Double?, erased: Bool, gracePeriod: Double, defaultProtection: String,
                deviceDirectory: String, pid: Int32, secretStore: String?, inodes: Int?) {
        self.state = state; self.classes = classes; self.passcodeSet = passcodeSet
        self.failedAttempts = failedAttempts; self.retryAfter = retryAfter; self.erased = erased
        self.gracePeriod = gracePeriod; self.defaultProtection = defaultProtection
        self.deviceDirectory = deviceDirectory; self.pid = pid; self.secretStore = secretStore
        self.inodes = inodes
    }
}
