// An NSError of LAErrorDomain converts to an LAError as on iOS: `error as? LAError` on
// the NSError that canEvaluatePolicy(_:error:) fills in, `catch let error as LAError`
// around code that throws NSErrors, and Apple's `LAError(_nsError:)`. Swift's runtime
// makes such casts through _ObjectiveCBridgeable on Linux too (Foundation's CocoaError
// does the same); an NSError of another domain, or of a code LAError does not have,
// stays an NSError.
import Foundation

extension LAError: _ObjectiveCBridgeable {
    public typealias _ObjectiveCType = NSError

    /// Apple's: the LAError an NSError of LAErrorDomain stands for; its description
    /// becomes the message. A code LAError does not have reads as authenticationFailed.
    public init(_nsError error: NSError) {
        self.init(Code(rawValue: error.code) ?? .authenticationFailed, error.userInfo[NSLocalizedDescriptionKey] as? String)
    }

    public func _bridgeToObjectiveC() -> NSError { nsError }

    public static func _forceBridgeFromObjectiveC(_ error: NSError, result: inout LAError?) {
        guard _conditionallyBridgeFromObjectiveC(error, result: &result) else {
            preconditionFailure("\(error.domain) \(error.code) is not an LAError")
        }
    }

    public static func _conditionallyBridgeFromObjectiveC(_ error: NSError, result: inout LAError?) -> Bool {
        result = error.domain == LAErrorDomain && Code(rawValue: error.code) != nil ? LAError(_nsError: error) : nil
        return result != nil
    }

    public static func _unconditionallyBridgeFromObjectiveC(_ error: NSError?) -> LAError {
        var result: LAError?
        _forceBridgeFromObjectiveC(error ?? NSError(domain: NSCocoaErrorDomain, code: 0), result: &result)
        return result ?? LAError(.authenticationFailed)
    }
}
