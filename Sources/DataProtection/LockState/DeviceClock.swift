// The device's clock: real time plus what tests moved it by (`dpfs clock advance`), so
// that a test checks three days of idleness in a second. The grace period, passcode
// delays and the inactivity reboot all read it. The offset lives as long as the mount.
import Foundation
import Synchronization

public final class DeviceClock: Sendable {
    private let offset = Mutex<TimeInterval>(0)

    public init() {}

    public var now: Date { Date().addingTimeInterval(offset.withLock { $0 }) }

    /// How far the clock was moved since the mount.
    public var advanced: TimeInterval { offset.withLock { $0 } }

    func advance(by seconds: TimeInterval) {
        offset.withLock { $0 += seconds }
    }
}
