// The metadata key authenticates what the device must read in every lock state and an
// attacker with write access to the device directory must not forge: which key slot
// of a file header is in force (and so the file's class), and the class a directory
// passes on. It is derived from the device secret, which never lies in the device
// directory, so editing a header or a directory's class gains nothing.
import CSodium

public enum MetadataKey {
    static let purpose = "dpfs.metadata.v2"
    public static let macSize = 16

    /// The device's metadata key, derived from its secret.
    public static func derive(from deviceSecret: SecureBuffer) -> SecureBuffer {
        PasscodeKDF.deviceKey(deviceSecret: deviceSecret, purpose: purpose)
    }

    /// BLAKE2b-128 of `message`, keyed with the metadata key.
    public static func mac(_ message: [UInt8], key: SecureBuffer) -> [UInt8] {
        var digest = [UInt8](repeating: 0, count: macSize)
        message.withUnsafeBytes { body in digest.withUnsafeMutableBytes { Sodium.hash(body, key: key.bytes, into: $0) } }
        return digest
    }

    /// Compares two MACs in constant time.
    public static func matches(_ a: [UInt8], _ b: some Collection<UInt8>) -> Bool {
        let b = Array(b)
        guard a.count == b.count else { return false }
        return a.withUnsafeBytes { x in b.withUnsafeBytes { y in sodium_memcmp(x.start, y.start, a.count) == 0 } }
    }
}
