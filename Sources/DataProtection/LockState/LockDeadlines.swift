// The deadlines of a lock, all counted from the moment it takes complete's key (the end
// of the grace period, or the lock itself with --now): completeWhenUserInactive's key
// goes the user-inactive period later, and the inactivity reboot takes every protected
// class. That moment is published lock-free, as AvailableClasses is, so that the many
// checks of a class can tell without the lock-state's lock whether a deadline has taken
// its key, whether or not anything has carried the deadline out yet.
import DPFSProtocol
import Foundation
import Synchronization

struct LockDeadlines: Sendable {
    let userInactivePeriod: TimeInterval
    /// nil: the device never restarts for inactivity.
    let inactivityReboot: TimeInterval?

    /// Whether a lock takes `protectionClass`'s key `elapsed` seconds after it took
    /// complete's (negative: before then).
    func takes(_ protectionClass: ProtectionClass, after elapsed: TimeInterval) -> Bool {
        guard elapsed >= 0 else { return false }
        switch protectionClass {
        case .complete, .completeUnlessOpen: return true
        case .completeWhenUserInactive: return elapsed >= userInactivePeriod || rebooted(after: elapsed)
        case .untilFirstAuth: return rebooted(after: elapsed)
        case .none: return false
        }
    }

    /// Whether the inactivity reboot falls `elapsed` seconds after the lock took complete's key.
    func rebooted(after elapsed: TimeInterval) -> Bool {
        inactivityReboot.map { elapsed >= $0 } ?? false
    }
}

/// When the lock under way or in force took, or takes, complete's key, on the clock the
/// deadlines run on (DeviceClock.uptime); nil while no lock is.
final class LockMoment: Sendable {
    private static let none = Double.nan.bitPattern
    private let bits = Atomic<UInt64>(LockMoment.none)

    var value: TimeInterval? {
        let moment = Double(bitPattern: bits.load(ordering: .acquiring))
        return moment.isNaN ? nil : moment
    }

    func set(_ moment: TimeInterval?) {
        bits.store(moment?.bitPattern ?? Self.none, ordering: .releasing)
    }
}
