// Foundation's FileProtectionType and Data.WritingOptions protection bits ↔ the class
// names the mount's `user.dpfs.protection` attribute speaks.
import DPFSProtocol
import Foundation

// Apple's FileProtectionType is Equatable and Hashable (an NS_TYPED_ENUM); Foundation on
// Linux leaves that out, so `url.fileProtection == .complete` and `switch` over the values
// would not compile there. The conformances use its raw value, as Apple's do.
extension FileProtectionType: @retroactive Equatable, @retroactive Hashable {}

extension FileProtectionType {
    /// Apple's `.completeWhenUserInactive` (iOS 17), which Foundation on Linux does not
    /// declare: the same raw value, so code written for iOS compiles unchanged.
    public static var completeWhenUserInactive: FileProtectionType {
        FileProtectionType(rawValue: "NSFileProtectionCompleteWhenUserInactive")
    }

    /// The dpfs class for this value; nil for a protection type dpfs does not have.
    var dpfsClass: ProtectionClass? {
        ProtectionClass(name: rawValue)
    }

    init(_ protectionClass: ProtectionClass) {
        switch protectionClass {
        case .none: self = .none
        case .complete: self = .complete
        case .completeUnlessOpen: self = .completeUnlessOpen
        case .untilFirstAuth: self = .completeUntilFirstUserAuthentication
        case .completeWhenUserInactive: self = .completeWhenUserInactive
        }
    }
}

extension Data.WritingOptions {
    /// Apple's `NSDataWritingFileProtectionCompleteWhenUserInactive` (iOS 17), which
    /// Foundation on Linux does not declare: the same bits, so code written for iOS
    /// compiles unchanged.
    public static let completeFileProtectionWhenUserInactive = Data.WritingOptions(rawValue: 0x5000_0000)

    /// The protection these options ask for, or nil when they name none.
    public var fileProtection: FileProtectionType? {
        switch rawValue & Data.WritingOptions.fileProtectionMask.rawValue {
        case Data.WritingOptions.noFileProtection.rawValue: return FileProtectionType.none
        case Data.WritingOptions.completeFileProtection.rawValue: return .complete
        case Data.WritingOptions.completeFileProtectionUnlessOpen.rawValue: return .completeUnlessOpen
        case Data.WritingOptions.completeFileProtectionUntilFirstUserAuthentication.rawValue:
            return .completeUntilFirstUserAuthentication
        case Data.WritingOptions.completeFileProtectionWhenUserInactive.rawValue: return .completeWhenUserInactive
        default: return nil
        }
    }
}
