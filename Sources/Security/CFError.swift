// CFError and the CF functions keychain code calls on one. CFError is NSError here
// (Foundation on Linux has no CF runtime): `error.takeRetainedValue() as Error`,
// `as NSError`, CFErrorGetCode and CFErrorCopyDescription all answer as on Apple's.
import DPFSProtocol
import Foundation

public typealias CFError = NSError
public typealias CFErrorDomain = CFString
public typealias CFErrorRef = CFError

/// The domain of errors whose code is an OSStatus.
public let kCFErrorDomainOSStatus: CFErrorDomain = NSOSStatusErrorDomain
public let kCFErrorDescriptionKey: CFString = NSLocalizedDescriptionKey
public let kCFErrorLocalizedFailureReasonKey: CFString = NSLocalizedFailureReasonErrorKey

public func CFErrorCreate(_ allocator: CFAllocator?, _ domain: CFErrorDomain!, _ code: CFIndex,
                          _ userInfo: CFDictionary?) -> CFError! {
    NSError(domain: domain, code: code, userInfo: userInfo)
}

public func CFErrorGetCode(_ error: CFError!) -> CFIndex { error.code }
public func CFErrorGetDomain(_ error: CFError!) -> CFErrorDomain! { error.domain }
public func CFErrorCopyDescription(_ error: CFError!) -> CFString! { error.localizedDescription }
public func CFErrorCopyFailureReason(_ error: CFError!) -> CFString? { error.localizedFailureReason }
public func CFErrorCopyUserInfo(_ error: CFError!) -> CFDictionary! { error.userInfo }

extension CFError {
    /// An OSStatus error with its explanation, as Security's functions make them.
    static func osStatus(_ status: OSStatus, _ reason: String) -> CFError {
        NSError(domain: NSOSStatusErrorDomain, code: Int(status),
                userInfo: [NSLocalizedDescriptionKey: "\(SecStatus.describe(status)): \(reason)"])
    }
}

/// Fills a SecKey call's error out-parameter, as Apple's calls do on failure.
func report(_ status: OSStatus, _ message: String, to error: UnsafeMutablePointer<Unmanaged<CFError>?>?) {
    error?.pointee = Unmanaged.passRetained(CFError.osStatus(status, message))
}
