// The seven kSecAttrAccessible values and the file class whose key seals each one.
// completeUnlessOpen never appears: the keychain has no "unless open" state.
import DataProtection

public enum Accessibility: String, CaseIterable, Sendable {
    case whenUnlocked = "WhenUnlocked"
    case afterFirstUnlock = "AfterFirstUnlock"
    case always = "Always"
    case whenPasscodeSetThisDeviceOnly = "WhenPasscodeSetThisDeviceOnly"
    case whenUnlockedThisDeviceOnly = "WhenUnlockedThisDeviceOnly"
    case afterFirstUnlockThisDeviceOnly = "AfterFirstUnlockThisDeviceOnly"
    case alwaysThisDeviceOnly = "AlwaysThisDeviceOnly"

    /// Apple's default for new items.
    public static let `default` = Accessibility.whenUnlocked

    /// Accepts the short name (`WhenUnlocked`) and Apple's constant (`kSecAttrAccessibleWhenUnlocked`).
    public init?(name: String) {
        let short = name.hasPrefix("kSecAttrAccessible") ? String(name.dropFirst("kSecAttrAccessible".count)) : name
        self.init(rawValue: short)
    }

    public var protectionClass: ProtectionClass {
        switch self {
        case .whenUnlocked, .whenUnlockedThisDeviceOnly, .whenPasscodeSetThisDeviceOnly: return .complete
        case .afterFirstUnlock, .afterFirstUnlockThisDeviceOnly: return .untilFirstAuth
        case .always, .alwaysThisDeviceOnly: return .none
        }
    }

    /// ThisDeviceOnly items never leave the device, so they may not be synchronizable.
    public var isThisDeviceOnly: Bool { rawValue.hasSuffix("ThisDeviceOnly") }

    public static var validNames: String { allCases.map(\.rawValue).joined(separator: ", ") }
}
