// The class keys in memory, by class. A key is present only while its class is
// available; for completeUnlessOpen the key held is the X25519 private key (its public
// key is always known). Removing a key zeroes it. Which classes are present is also
// published lock-free (AvailableClasses), for the many checks that need no key.
import Synchronization

public struct ClassKeySet: ~Copyable {
    private var keys: [ProtectionClass: SecureBuffer] = [:]
    /// Follows `keys`: every insert and wipe updates it.
    public let available = AvailableClasses()

    public init() {}

    public func key(for protectionClass: ProtectionClass) -> SecureBuffer? { keys[protectionClass] }

    public func isAvailable(_ protectionClass: ProtectionClass) -> Bool { keys[protectionClass] != nil }

    public mutating func insert(_ key: SecureBuffer, for protectionClass: ProtectionClass) {
        keys.updateValue(key, forKey: protectionClass)?.wipe()
        available.set(protectionClass, true)
    }

    public mutating func wipe(_ protectionClass: ProtectionClass) {
        available.set(protectionClass, false)
        keys.removeValue(forKey: protectionClass)?.wipe()
    }

    public mutating func wipeAll() {
        for protectionClass in ProtectionClass.allCases { wipe(protectionClass) }
    }
}

/// The classes whose keys a ClassKeySet holds, as one atomic bit set: a check reads it
/// without the lock that guards the keys. A key itself is only ever used under that
/// lock, which checks again, so a check that races a lock only answers as a check made
/// a moment earlier would.
public final class AvailableClasses: Sendable {
    private let bits = Atomic<UInt8>(0)

    public func contains(_ protectionClass: ProtectionClass) -> Bool {
        bits.load(ordering: .acquiring) & Self.bit(protectionClass) != 0
    }

    func set(_ protectionClass: ProtectionClass, _ present: Bool) {
        if present {
            bits.bitwiseOr(Self.bit(protectionClass), ordering: .releasing)
        } else {
            bits.bitwiseAnd(~Self.bit(protectionClass), ordering: .releasing)
        }
    }

    private static func bit(_ protectionClass: ProtectionClass) -> UInt8 { 1 << protectionClass.rawValue }
}
