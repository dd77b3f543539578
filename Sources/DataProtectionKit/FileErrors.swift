// File errors as Foundation throws them: a CocoaError whose NSUnderlyingErrorKey holds
// the POSIXError (EPERM when the class key is not available, as on iOS).
import DPFSProtocol
import Foundation
import Glibc

enum FileErrors {
    static func cocoa(_ code: Int32, path: String, writing: Bool) -> CocoaError {
        let cocoaCode: CocoaError.Code
        switch code {
        case EPERM, EACCES: cocoaCode = writing ? .fileWriteNoPermission : .fileReadNoPermission
        case ENOENT: cocoaCode = writing ? .fileNoSuchFile : .fileReadNoSuchFile
        case EEXIST: cocoaCode = .fileWriteFileExists
        case ENOSPC, EDQUOT: cocoaCode = .fileWriteOutOfSpace
        case EROFS: cocoaCode = .fileWriteVolumeReadOnly
        case ENOTSUP, EOPNOTSUPP: cocoaCode = .featureUnsupported
        default: cocoaCode = writing ? .fileWriteUnknown : .fileReadUnknown
        }
        var userInfo: [String: Any] = [NSFilePathErrorKey: path]
        if let posix = POSIXErrorCode(rawValue: code) { userInfo[NSUnderlyingErrorKey] = POSIXError(posix) }
        return CocoaError(cocoaCode, userInfo: userInfo)
    }
}

extension Error {
    /// The errno inside a file error (CocoaError's underlying POSIXError, or a POSIXError).
    public var posixCode: POSIXErrorCode? {
        if let posix = self as? POSIXError { return posix.code }
        if let cocoa = self as? CocoaError, let underlying = cocoa.userInfo[NSUnderlyingErrorKey] as? POSIXError {
            return underlying.code
        }
        let underlying = (self as NSError).userInfo[NSUnderlyingErrorKey] as? NSError
        if let underlying, underlying.domain == NSPOSIXErrorDomain { return POSIXErrorCode(rawValue: Int32(underlying.code)) }
        return nil
    }

    /// Whether this is iOS's "protected data is not available" (EPERM).
    public var isProtectedDataUnavailable: Bool { posixCode == .EPERM }
}
