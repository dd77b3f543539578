// The five iOS Data Protection classes and every name a user may call them by.
import Foundation

public enum ProtectionClass: UInt8, CaseIterable, Sendable, CustomStringConvertible {
    case none = 0                 // iOS class D
    case complete = 1             // iOS class A
    case completeUnlessOpen = 2   // iOS class B
    case untilFirstAuth = 3       // iOS class C, the iOS default
    /// iOS 17: as untilFirstAuth, until the device has stayed locked for the user-inactive
    /// period; then as complete until the next unlock.
    case completeWhenUserInactive = 4

    public var name: String {
        switch self {
        case .none: return "none"
        case .complete: return "complete"
        case .completeUnlessOpen: return "completeUnlessOpen"
        case .untilFirstAuth: return "untilFirstAuth"
        case .completeWhenUserInactive: return "completeWhenUserInactive"
        }
    }

    public var description: String { name }

    /// How much of the time the class keeps its key away: a change to a stronger class
    /// is a raise, which gives the file a new key (Rekey).
    public var strength: Int {
        switch self {
        case .none: return 0
        case .untilFirstAuth: return 1
        case .completeWhenUserInactive: return 2
        case .completeUnlessOpen: return 3
        case .complete: return 4
        }
    }

    /// Accepts the canonical name, Foundation's constant names and the iOS class letter
    /// (Apple names none for completeWhenUserInactive).
    public init?(name raw: String) {
        let name = raw.trimmingCharacters(in: [" ", "\n", "\t", "\0"])
        switch name {
        case "none", "NSFileProtectionNone", "D":
            self = .none
        case "complete", "NSFileProtectionComplete", "A":
            self = .complete
        case "completeUnlessOpen", "NSFileProtectionCompleteUnlessOpen", "B":
            self = .completeUnlessOpen
        case "untilFirstAuth", "completeUntilFirstUserAuthentication",
             "NSFileProtectionCompleteUntilFirstUserAuthentication", "C":
            self = .untilFirstAuth
        case "completeWhenUserInactive", "NSFileProtectionCompleteWhenUserInactive":
            self = .completeWhenUserInactive
        default:
            return nil
        }
    }

    public static var validNames: String { allCases.map(\.name).joined(separator: ", ") }
}

/// Stored by canonical name (keybag.json), read by any accepted name.
extension ProtectionClass: Codable {
    public init(from decoder: Decoder) throws {
        let name = try decoder.singleValueContainer().decode(String.self)
        guard let parsed = ProtectionClass(name: name) else {
            throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath,
                                                    debugDescription: "unknown protection class \(name)"))
        }
        self = parsed
    }

    public func encode(to encoder: Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(name)
    }
}
