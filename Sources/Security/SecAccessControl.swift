// SecAccessControl: an item's accessibility plus the user authentication its use
// requires, with the flag values of Apple's SecAccessControlCreateFlags. The object
// carries no policy of its own: the daemon's item store keeps the flags with the item
// and asks the device's simulated user when the item is read.
import DPFSProtocol
import Foundation

public struct SecAccessControlCreateFlags: OptionSet, Sendable, Hashable {
    public let rawValue: CFOptionFlags
    public init(rawValue: CFOptionFlags) { self.rawValue = rawValue }

    public static let userPresence = SecAccessControlCreateFlags(rawValue: AccessControlFlags.userPresence.rawValue)
    public static let biometryAny = SecAccessControlCreateFlags(rawValue: AccessControlFlags.biometryAny.rawValue)
    public static let biometryCurrentSet = SecAccessControlCreateFlags(rawValue: AccessControlFlags.biometryCurrentSet.rawValue)
    public static let devicePasscode = SecAccessControlCreateFlags(rawValue: AccessControlFlags.devicePasscode.rawValue)
    public static let watch = SecAccessControlCreateFlags(rawValue: AccessControlFlags.watch.rawValue)
    public static let or = SecAccessControlCreateFlags(rawValue: AccessControlFlags.or.rawValue)
    public static let and = SecAccessControlCreateFlags(rawValue: AccessControlFlags.and.rawValue)
    public static let privateKeyUsage = SecAccessControlCreateFlags(rawValue: AccessControlFlags.privateKeyUsage.rawValue)
    public static let applicationPassword = SecAccessControlCreateFlags(rawValue: AccessControlFlags.applicationPassword.rawValue)
    /// iOS 18's name of the paired-device flag, which `watch` was before.
    public static let companion = watch
    /// The names of iOS 9–11, which Apple keeps as aliases.
    public static let touchIDAny = biometryAny
    public static let touchIDCurrentSet = biometryCurrentSet
}

/// Apple's C names of the flags.
public let kSecAccessControlUserPresence = SecAccessControlCreateFlags.userPresence
public let kSecAccessControlBiometryAny = SecAccessControlCreateFlags.biometryAny
public let kSecAccessControlBiometryCurrentSet = SecAccessControlCreateFlags.biometryCurrentSet
public let kSecAccessControlDevicePasscode = SecAccessControlCreateFlags.devicePasscode
public let kSecAccessControlOr = SecAccessControlCreateFlags.or
public let kSecAccessControlAnd = SecAccessControlCreateFlags.and
public let kSecAccessControlPrivateKeyUsage = SecAccessControlCreateFlags.privateKeyUsage
public let kSecAccessControlWatch = SecAccessControlCreateFlags.watch
public let kSecAccessControlCompanion = SecAccessControlCreateFlags.companion

/// An access control object, the value of kSecAttrAccessControl. Hashable, as every
/// CF object is on Apple's, so it can be stored as AnyHashable or in a Set.
public final class SecAccessControl: Sendable, CustomStringConvertible, Hashable {
    /// The kSecAttrAccessible value it was made with ("ak", "cku", …).
    public let protection: String
    public let flags: SecAccessControlCreateFlags

    init(protection: String, flags: SecAccessControlCreateFlags) {
        self.protection = protection
        self.flags = flags
    }

    public var description: String {
        "<SecAccessControl protection: \(protection), flags: \(AccessControlFlags(rawValue: flags.rawValue).nameList)>"
    }

    public static func == (lhs: SecAccessControl, rhs: SecAccessControl) -> Bool {
        lhs.protection == rhs.protection && lhs.flags == rhs.flags
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(protection)
        hasher.combine(flags)
    }

    /// The store's accessibility name, or nil for a protection that is none of Apple's.
    var accessibleName: String? { SecItemQuery.accessibility[protection] }
}

/// An access control for `protection` (a kSecAttrAccessible value) and `flags`; nil
/// with an NSOSStatusErrorDomain errSecParam error for anything else, as Apple's.
/// `protection` takes the constant directly or `as CFTypeRef`.
public func SecAccessControlCreateWithFlags(_ allocator: CFAllocator?, _ protection: Any,
                                            _ flags: SecAccessControlCreateFlags,
                                            _ error: UnsafeMutablePointer<Unmanaged<CFError>?>?) -> SecAccessControl? {
    guard let name = protection as? String, SecItemQuery.accessibility[name] != nil else {
        error?.pointee = Unmanaged.passRetained(CFError.osStatus(errSecParam, "the protection is not a kSecAttrAccessible value"))
        return nil
    }
    if let problem = AccessControlFlags(rawValue: flags.rawValue).problem {
        error?.pointee = Unmanaged.passRetained(CFError.osStatus(errSecParam, problem))
        return nil
    }
    return SecAccessControl(protection: name, flags: flags)
}

/// The accessibility an access control was made with.
public func SecAccessControlGetConstraints(_ access: SecAccessControl) -> CFDictionary? {
    [kSecAttrAccessible: access.protection]
}

// The keys of access control and authentication, with Apple's values.
public let kSecAttrAccessControl: CFString = "accc"
/// An LAContext: its earlier successful evaluation spares the user another prompt.
public let kSecUseAuthenticationContext: CFString = "u_AuthCtx"
/// Deprecated since iOS 14 for kSecUseAuthenticationUI; true means Fail.
public let kSecUseNoAuthenticationUI: CFString = "u_NoAuthUI"

/// A key made with an access control takes its accessibility and flags from it (SecKeyCreation).
extension SecAccessControl: AccessControlProtection {
    var protectionAccessible: String? { protection }
    var accessControlFlags: UInt { flags.rawValue }
}
