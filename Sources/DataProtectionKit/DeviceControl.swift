// Drives the device from test code (XCTest or swift-testing): lock, unlock, restart,
// read the state and wait for one — the same requests `dpfs lock|unlock|restart|status`
// send. Every call has a time limit; none hangs when the daemon is gone.
import DPFSProtocol
import Foundation

public struct DeviceControl: Sendable {
    public let mountpoint: String

    /// The device at an explicit mountpoint.
    public init(mountpoint: String) {
        self.mountpoint = mountpoint
    }

    /// The device named by DPFS_MOUNT (as `dpfs run` sets it); throws DeviceError.noDevice
    /// when it is unset.
    public init() throws {
        self.mountpoint = try DeviceLocation.requireMountpoint()
    }

    public var state: DeviceState {
        get throws { DeviceState(try DeviceChannel.status(of: mountpoint).state) }
    }

    /// Whether `complete` data is readable now: true when unlocked, during the grace
    /// period, and always on a device without a passcode.
    public var isProtectedDataAvailable: Bool {
        get throws { try DeviceChannel.status(of: mountpoint).classes[ProtectionClass.complete.name] == true }
    }

    /// The grace period between `lock()` and `locked`, fixed at mount (`--grace-period`).
    public var gracePeriod: Double {
        get throws { try DeviceChannel.status(of: mountpoint).gracePeriod }
    }

    /// Seconds the device stays locked before completeWhenUserInactive files become
    /// unavailable until the next unlock, fixed at mount (`--user-inactive-period`).
    public var userInactivePeriod: Double {
        get throws { (try DeviceChannel.status(of: mountpoint).userInactivePeriodHours ?? 24) * 3600 }
    }

    public var passcodeSet: Bool {
        get throws { try DeviceChannel.status(of: mountpoint).passcodeSet }
    }

    /// Locks the device: state `locking` for the mount's grace period, then `locked`;
    /// with `now`, `locked` at once. Returns false when no passcode is set (nothing locks).
    @discardableResult
    public func lock(now: Bool = false) throws -> Bool {
        let reply = try DeviceChannel.send(.lock(now: now), to: mountpoint)
        return reply.message == nil
    }

    public func unlock(passcode: DevicePasscode) throws {
        _ = try DeviceChannel.send(.unlock, to: mountpoint, secrets: [passcode.secret])
    }

    /// Unlocks with the first line of a 0600 file.
    public func unlock(passcodeFile path: String) throws {
        try unlock(passcode: DevicePasscode(file: path))
    }

    /// A simulated reboot: every class key but `none`'s is wiped; state beforeFirstUnlock.
    public func restart() throws {
        _ = try DeviceChannel.send(.restart, to: mountpoint)
    }

    /// Moves the device's clock forward by `seconds`: a grace period, a passcode delay
    /// or the inactivity reboot (72 h locked) that falls due on the way happens now.
    public func advanceClock(by seconds: Double) throws {
        _ = try DeviceChannel.send(.clockAdvance(seconds: seconds), to: mountpoint)
    }

    /// Returns once the device is in `state`; throws DeviceError.stateNotReached after
    /// `timeout` seconds. Polls the daemon every `interval` seconds.
    public func waitFor(state wanted: DeviceState, timeout: Double = 30, interval: Double = 0.05) throws {
        let deadline = Date().addingTimeInterval(timeout)
        var last: DeviceState?
        while true {
            last = try state
            if last == wanted { return }
            if Date() >= deadline { throw DeviceError.stateNotReached(wanted: wanted, last: last, seconds: timeout) }
            Thread.sleep(forTimeInterval: min(interval, max(0, deadline.timeIntervalSinceNow)))
        }
    }
}
