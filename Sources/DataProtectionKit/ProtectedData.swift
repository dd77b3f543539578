// Whether protected data is available, and the notifications that say when that changes
// (Apple: UIApplication.isProtectedDataAvailable and the protectedData… notifications).
import DPFSProtocol
import Foundation

public enum ProtectedData {
    /// Whether files of class `complete` can be read now, for the device named by
    /// DPFS_MOUNT. False when no device can be reached (nothing protected can be read
    /// then); `availability()` says why.
    public static var isAvailable: Bool {
        (try? availability()) ?? false
    }

    /// As `isAvailable`, but throws DeviceError when the device cannot be reached.
    public static func availability() throws -> Bool {
        try DeviceControl().isProtectedDataAvailable
    }

    /// Starts posting `UIApplication.protectedDataWillBecomeUnavailableNotification` and
    /// `…DidBecomeAvailableNotification` on `NotificationCenter.default`, fed by the
    /// daemon's event stream on a background thread. Returns once subscribed (events from
    /// then on are posted); a call while observing, or while another thread's call
    /// subscribes, returns once the one subscription is live. Throws DeviceError when the
    /// device cannot be reached. When the daemon dies or the device is unmounted,
    /// will-become-unavailable is posted with a ProtectedDataEndReason and observing ends;
    /// when the daemon dropped this subscriber (it fell behind), observing goes on.
    public static func startObserving() throws {
        try ProtectedDataObserver.shared.start(mountpoint: DeviceLocation.requireMountpoint())
    }

    /// Stops posting; the background thread ends.
    public static func stopObserving() {
        ProtectedDataObserver.shared.stop()
    }

    public static var isObserving: Bool { ProtectedDataObserver.shared.isObserving }
}

extension Notification.Name {
    /// Apple's pre-Swift-4.2 spelling: `.UIApplicationProtectedDataWillBecomeUnavailable`.
    public static let UIApplicationProtectedDataWillBecomeUnavailable =
        Notification.Name("UIApplicationProtectedDataWillBecomeUnavailable")
    public static let UIApplicationProtectedDataDidBecomeAvailable =
        Notification.Name("UIApplicationProtectedDataDidBecomeAvailable")
}

/// The keys of a posted notification's userInfo: what the daemon reported.
public enum ProtectedDataNotificationKey {
    /// The daemon's event name (willBecomeUnavailable, restart, didBecomeAvailable), or
    /// a ProtectedDataEndReason raw value when the event stream itself ended.
    public static let event = "dpfsEvent"
    /// The device's state when the event was sent (a DeviceState raw value); absent
    /// when the stream ended, as no daemon reports one then.
    public static let state = "dpfsState"
}

/// Why the event stream ended without stopObserving(): the `dpfsEvent` of the
/// will-become-unavailable notification posted then. Observing ends (isObserving is
/// false from then on), except after `dropped`.
public enum ProtectedDataEndReason: String, Sendable {
    /// The daemon died: the mount stays, but answers nothing.
    case daemonGone
    /// The device was unmounted.
    case unmounted
    /// The daemon still answers but dropped this subscriber, which fell behind its
    /// events: what happened meanwhile is unknown, so the data is taken as gone. The
    /// observer subscribes again at once (observing does not end) and posts
    /// did-become-available if the data is available then; should that fail, observing
    /// ends and a second will-become-unavailable gives the reason.
    case dropped
}
