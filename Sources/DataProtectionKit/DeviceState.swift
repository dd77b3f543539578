// The device's lock state, as the daemon reports it.

import DPFSProtocol
public enum DeviceState: String, Sendable, CaseIterable {
    /// After mount or restart, passcode set: only `none` files are available.
    case beforeFirstUnlock
    case unlocked
    /// The grace period after a lock: everything still works.
    case locking
    case locked

    init(_ phase: LockPhase) {
        switch phase {
        case .beforeFirstUnlock: self = .beforeFirstUnlock
        case .unlocked: self = .unlocked
        case .locking: self = .locking
        case .locked: self = .locked
        }
    }
}
