// CFError as SecKey's calls hand it back through `UnsafeMutablePointer<Unmanaged<CFError>?>`:
// a class (Unmanaged needs one) that is a Swift Error, in Apple's OSStatus domain with
// the status as its code, so `error!.takeRetainedValue() as Error` works as on iOS.
import Foundation

public final class CFError: Error, CustomStringConvertible, @unchecked Sendable {
    public let domain: String
    public let code: Int
    let message: String

    init(status: OSStatus, _ message: String) {
        domain = kCFErrorDomainOSStatus
        code = Int(status)
        self.message = message
    }

    public var description: String { "\(message) (OSStatus \(code))" }
    /// Lets `error as NSError` keep the OSStatus, as code comparing `.code` expects.
    public var _domain: String { domain }
    public var _code: Int { code }
}

public typealias CFErrorRef = CFError
public let kCFErrorDomainOSStatus: CFString = "NSOSStatusErrorDomain"

public func CFErrorGetCode(_ error: CFError) -> CFIndex { error.code }
public func CFErrorGetDomain(_ error: CFError) -> CFString { error.domain }
public func CFErrorCopyDescription(_ error: CFError) -> CFString { error.description }

/// Fills a SecKey call's error out-parameter, as Apple's calls do on failure.
func report(_ status: OSStatus, _ message: String, to error: UnsafeMutablePointer<Unmanaged<CFError>?>?) {
    error?.pointee = Unmanaged.passRetained(CFError(status: status, message))
}
