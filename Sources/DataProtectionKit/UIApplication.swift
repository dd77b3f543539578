// The few UIApplication members that iOS code uses for protected data, so that such code
// reads the same on Linux. There is no app object or run loop behind them: the
// notifications come from ProtectedData.startObserving(), on its background thread.
import DPFSProtocol
import Foundation

public final class UIApplication: Sendable {
    public static let shared = UIApplication()

    private init() {}

    /// ProtectedData.isAvailable for the device named by DPFS_MOUNT.
    public var isProtectedDataAvailable: Bool { ProtectedData.isAvailable }

    public static let protectedDataWillBecomeUnavailableNotification =
        Notification.Name.UIApplicationProtectedDataWillBecomeUnavailable
    public static let protectedDataDidBecomeAvailableNotification =
        Notification.Name.UIApplicationProtectedDataDidBecomeAvailable
}
