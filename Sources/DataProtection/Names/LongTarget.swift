// Long symlink targets: a target whose sealed form would pass what a backing symlink
// holds (PATH_MAX − 1 bytes; sealing adds a nonce, a tag and base64url's third) is
// stored sealed in a file at the sandbox root, and the backing symlink holds a
// stand-in naming that file and the target's length. The stand-in is 45 characters:
// base64url never encodes to a length of 1 modulo 4, so a symlink of that size is a
// stand-in and no sealed target, and stat tells the two apart without a readlink.
public enum LongTarget {
    public static let prefix = "dpfs-long-target."
    public static let standInLength = 45
    /// The store's files sit at the sandbox root under the reserved prefix no listing shows.
    public static let filePrefix = ".fuse_hidden-target."
    private static let lengthDigits = 5

    /// A new stand-in for a target of `length` bytes, under a random identifier.
    public static func makeStandIn(length: Int) -> String {
        let id = Base64URL.encode(Sodium.randomBytes(16))
        let digits = String(length)
        return prefix + id + "." + String(repeating: "0", count: max(0, lengthDigits - digits.count)) + digits
    }

    /// The target length a stand-in records; nil when `stored` is no stand-in.
    public static func length(of stored: String) -> Int? {
        guard stored.utf8.count == standInLength, stored.hasPrefix(prefix) else { return nil }
        return Int(stored.suffix(lengthDigits))
    }

    /// The name of the store file that holds the sealed target of `standIn`.
    public static func fileName(of standIn: String) -> String {
        filePrefix + standIn.dropFirst(prefix.count)
    }
}
