// The constraints of a SecAccessControl, with the bit values of Apple's
// SecAccessControlCreateFlags, as an item stores them and the daemon reads them.
public struct AccessControlFlags: OptionSet, Sendable, Hashable, Codable {
    public let rawValue: UInt
    public init(rawValue: UInt) { self.rawValue = rawValue }

    /// Biometry (any enrolled set) or the passcode.
    public static let userPresence = AccessControlFlags(rawValue: 1 << 0)
    public static let biometryAny = AccessControlFlags(rawValue: 1 << 1)
    /// Biometry as enrolled when the item was stored: a re-enrollment invalidates the item.
    public static let biometryCurrentSet = AccessControlFlags(rawValue: 1 << 3)
    public static let devicePasscode = AccessControlFlags(rawValue: 1 << 4)
    public static let watch = AccessControlFlags(rawValue: 1 << 5)
    public static let or = AccessControlFlags(rawValue: 1 << 14)
    public static let and = AccessControlFlags(rawValue: 1 << 15)
    public static let privateKeyUsage = AccessControlFlags(rawValue: 1 << 30)
    public static let applicationPassword = AccessControlFlags(rawValue: 1 << 31)

    /// Every bit Apple defines; any other is refused as errSecParam.
    public static let known: AccessControlFlags = [
        .userPresence, .biometryAny, .biometryCurrentSet, .devicePasscode, .watch, .or, .and,
        .privateKeyUsage, .applicationPassword,
    ]

    /// What .userPresence may be combined with: it is biometry-or-passcode already.
    static let besideUserPresence: AccessControlFlags = [.userPresence, .privateKeyUsage, .applicationPassword]

    /// Why these flags cannot make an access control, or nil when they can: what
    /// `unsupported` names, or a combination Apple's SecAccessControlCreateWithFlags
    /// refuses (both biometry constraints; .userPresence beside anything but
    /// .privateKeyUsage and .applicationPassword). The API, the CLI and the item store
    /// all ask this.
    public var problem: String? {
        if let unsupported { return unsupported }
        if isSuperset(of: [.biometryAny, .biometryCurrentSet]) {
            return "an access control takes one biometry constraint: biometryAny or biometryCurrentSet"
        }
        if contains(.userPresence) && !AccessControlFlags.besideUserPresence.isSuperset(of: self) {
            return "userPresence combines only with privateKeyUsage and applicationPassword"
        }
        return nil
    }

    /// Why these flags cannot be honoured at all: unknown bits, both conjunctions, a
    /// watch (this device has none to pair), an application password. A received
    /// synced item is checked against these only, as a stored item keeps the flags it
    /// was made with.
    public var unsupported: String? {
        if !AccessControlFlags.known.isSuperset(of: self) { return "unknown access-control flags \(rawValue)" }
        if contains(.or) && contains(.and) { return "an access control is .or or .and, not both" }
        if contains(.watch) { return "no watch is paired with a dpfs device" }
        if contains(.applicationPassword) { return "application passwords are not supported" }
        return nil
    }

    /// The names `dpfs keychain --access-control` takes, comma-separated, and prints.
    public static let names: [(String, AccessControlFlags)] = [
        ("userPresence", .userPresence), ("biometryAny", .biometryAny),
        ("biometryCurrentSet", .biometryCurrentSet), ("devicePasscode", .devicePasscode),
        ("or", .or), ("and", .and), ("privateKeyUsage", .privateKeyUsage),
    ]

    /// "biometryCurrentSet,or,devicePasscode" or a decimal number; nil for anything else.
    public init?(names text: String) {
        if let number = UInt(text) { self.init(rawValue: number); return }
        var flags: AccessControlFlags = []
        for name in text.split(separator: ",") {
            guard let flag = Self.names.first(where: { $0.0.lowercased() == name.lowercased() })?.1 else { return nil }
            flags.insert(flag)
        }
        guard !flags.isEmpty else { return nil }
        self = flags
    }

    public var nameList: String {
        Self.names.filter { contains($0.1) }.map(\.0).joined(separator: ",")
    }
}
