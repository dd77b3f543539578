// The four iOS Data Protection classes and every name a user may call them by.
import Foundation

public enum ProtectionClass: UInt8, CaseIterable, Sendable, CustomStringConvertible {
    case none = 0                 // iOS class D
    case complete = 1             // iOS class A
    case completeUnlessOpen = 2   // iOS class B
    case untilFirstAuth = 3       // iOS class C, the iOS default

    public var name: String {
        switch self {
        case .none: return "none"
        case .complete: return "complete"
        case .completeUnlessOpen: return "completeUnlessOpen"
        case .untilFirstAuth: return "untilFirstAuth"
        }
    }

    public var description: String { name }

    /// How much of the time the class keeps its key away: a change to a stronger class
    /// is a raise, which gives the file a new key (Rekey).
    public var strength: Int {
        switch self {
        case .none: return 0
        case .untilFirstAuth: return 1
        case .completeUnlessOpen: return 2
        case .complete: return 3
        }
    }

    /// Accepts the canonical name, Foundation's constant names and the iOS class letter.
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
        default:
            return nil
        }
    }

    public static let validNames = "none, complete, completeUnlessOpen, untilFirstAuth"
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
