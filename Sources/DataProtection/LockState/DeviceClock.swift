// The device's clock: real time plus what tests moved it by (`dpfs clock advance`), so
// that a test checks three days of idleness in a second. The grace period, passcode
// delays and the inactivity reboot all read it. The offset lives as long as the mount.
import CLinux
import Foundation
import Synchronization

public final class DeviceClock: Sendable {
    private let offset = Mutex<TimeInterval>(0)

    public init() {}

    public var now: Date { Date().addingTimeInterval(offset.withLock { $0 }) }

    /// The clock the lock's deadlines (the grace period, the user-inactive period, the
    /// inactivity reboot) run on, in seconds: the boot clock plus the offset. Unlike
    /// `now` it counts a suspended machine's sleep, as a phone's time passes while its
    /// screen is off, and setting the wall clock back cannot stretch a grace period.
    var uptime: TimeInterval { dpfs_boot_clock() + offset.withLock { $0 } }

    /// The boot clock's reading when `uptime` reads `deadline` (for a timer set on it).
    func bootClockReading(at deadline: TimeInterval) -> TimeInterval { deadline - offset.withLock { $0 } }

    /// How far the clock was moved since the mount.
    public var advanced: TimeInterval { offset.withLock { $0 } }

    func advance(by seconds: TimeInterval) {
        offset.withLock { $0 += seconds }
    }
}
