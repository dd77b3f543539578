// The class keys in memory, by class. A key is present only while its class is
// available; for completeUnlessOpen the key held is the X25519 private key (its public
// key is always known). Removing a key zeroes it.

public struct ClassKeySet: ~Copyable {
    private var keys: [ProtectionClass: SecureBuffer] = [:]

    public init() {}

    public func key(for protectionClass: ProtectionClass) -> SecureBuffer? { keys[protectionClass] }

    public func isAvailable(_ protectionClass: ProtectionClass) -> Bool { keys[protectionClass] != nil }

    public mutating func insert(_ key: SecureBuffer, for protectionClass: ProtectionClass) {
        keys.updateValue(key, forKey: protectionClass)?.wipe()
    }

    public mutating func wipe(_ protectionClass: ProtectionClass) {
        keys.removeValue(forKey: protectionClass)?.wipe()
    }

    public mutating func wipeAll() {
        for protectionClass in ProtectionClass.allCases { wipe(protectionClass) }
    }
}
