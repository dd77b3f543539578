// What the keychain examples share: each SecItem call is printed with the status it
// got, and compared with the status iOS gives in the same situation; any difference
// makes the example exit 1.
import Foundation
import Security

public final class ExampleRun {
    private var mismatches = 0
    public let deviceIsLocked: Bool

    public init(arguments: [String] = CommandLine.arguments) {
        deviceIsLocked = arguments.contains("--locked")
    }

    /// Prints `what` and its status; counts it when iOS would answer `expected`.
    @discardableResult
    public func expect(_ what: String, _ status: OSStatus, _ expected: OSStatus) -> Bool {
        let matches = status == expected
        let mark = matches ? "ok  " : "FAIL"
        print("\(mark) \(what) → \(Self.name(status)) (\(status))" + (matches ? "" : ", iOS gives \(Self.name(expected)) (\(expected))"))
        if !matches { mismatches += 1 }
        return matches
    }

    public func check(_ what: String, _ condition: Bool) {
        print("\(condition ? "ok  " : "FAIL") \(what)")
        if !condition { mismatches += 1 }
    }

    /// Ends the program: 0 when every call answered as on iOS.
    public func finish() -> Never {
        print(mismatches == 0 ? "every call answered as on iOS" : "\(mismatches) call(s) differ from iOS")
        exit(mismatches == 0 ? 0 : 1)
    }

    static func name(_ status: OSStatus) -> String {
        switch status {
        case errSecSuccess: return "errSecSuccess"
        case errSecParam: return "errSecParam"
        case errSecDuplicateItem: return "errSecDuplicateItem"
        case errSecItemNotFound: return "errSecItemNotFound"
        case errSecInteractionNotAllowed: return "errSecInteractionNotAllowed"
        case errSecMissingEntitlement: return "errSecMissingEntitlement"
        case errSecNotAvailable: return "errSecNotAvailable"
        case errSecAuthFailed: return "errSecAuthFailed"
        case errSecUserCanceled: return "errSecUserCanceled"
        default: return "OSStatus"
        }
    }
}

