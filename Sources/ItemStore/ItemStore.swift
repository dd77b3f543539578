// PLACEHOLDER until the item store lands: every call answers errSecNotAvailable.
import DataProtection
import Foundation

public final class ItemStore: Sendable {
    public init(path: String, device: LockStateManager) throws {}

    /// Creates the database in a new device directory and registers the sandbox's app.
    public static func initialize(path: String, appBundleID: String?, entitlementsPlist: String?) throws {}

    public func perform(_ request: KeychainRequest) -> KeychainResponse {
        KeychainResponse(status: -25291)
    }

    /// Registers another app identity from an entitlements plist; returns its bundle ID.
    public func registerApp(entitlements: Data) throws -> String { "" }
}
