// Which names a node may be reached by. A sealed name proves only that some node was
// given that name in that directory, not which one: an attacker with write access to
// the backing tree could rename one file's backing node over another's and have it
// read under the other's name. So every regular file and directory carries, in its
// `user.dpfs.names` attribute, one tag per name it has: a MAC under the metadata key
// over the node's identity (a file's ID from its header, a directory's ID from its
// class record) and the name's place (NamePlace). A node reached by a name its tags do
// not list reads as EIO. The attribute moves with the node and the tag with the
// identity, so neither can be carried to another node or forged without the device
// secret.

/// A name in a directory, as 16 bytes: the synthetic IV of its sealed form, which is
/// a keyed hash of (directory ID ‖ name) (NameCipher), so it stands for both.
public struct NamePlace: Hashable, Sendable {
    let high: UInt64
    let low: UInt64

    /// `iv`: the 16 bytes of a synthetic IV.
    init(iv: UnsafeRawBufferPointer) {
        high = UInt64(bigEndian: iv.loadUnaligned(fromByteOffset: 0, as: UInt64.self))
        low = UInt64(bigEndian: iv.loadUnaligned(fromByteOffset: 8, as: UInt64.self))
    }

    var bytes: [UInt8] {
        (0..<8).map { UInt8(truncatingIfNeeded: high >> (56 - 8 * $0)) }
            + (0..<8).map { UInt8(truncatingIfNeeded: low >> (56 - 8 * $0)) }
    }
}

public enum NameBinding {
    public static let attribute = "user.dpfs.names"
    public static let tagSize = MetadataKey.macSize
    /// Names one node may have: its tags must fit one backing attribute block (ext4's
    /// is 4 KiB) beside its other attributes, so a link past this is refused (EMLINK).
    public static let maxNames = 200

    /// The tag a node of `identity` keeps for its name at `place`.
    public static func tag(identity: [UInt8], place: NamePlace, metadataKey: SecureBuffer) -> [UInt8] {
        MetadataKey.mac(Array("dpfs.name-binding.v1".utf8) + [UInt8(identity.count)] + identity + place.bytes,
                        key: metadataKey)
    }

    /// The tags of a stored attribute value; nil when it is not a whole number of tags.
    public static func decode(_ stored: some Collection<UInt8>) -> [[UInt8]]? {
        let bytes = Array(stored)
        guard bytes.count % tagSize == 0, bytes.count / tagSize <= maxNames else { return nil }
        return stride(from: 0, to: bytes.count, by: tagSize).map { Array(bytes[$0..<$0 + tagSize]) }
    }

    public static func encode(_ tags: [[UInt8]]) -> [UInt8] { tags.flatMap { $0 } }

    /// Whether `tags` hold the tag of `identity` at `place`.
    public static func lists(_ tags: [[UInt8]], identity: [UInt8], place: NamePlace, metadataKey: SecureBuffer) -> Bool {
        let wanted = tag(identity: identity, place: place, metadataKey: metadataKey)
        // Every tag is compared (constant time each), so timing shows no position.
        return tags.reduce(false) { found, stored in MetadataKey.matches(wanted, stored) || found }
    }

    /// `tags` with the tag of `identity` at `adding` (if not there) and without the one at
    /// `removing`; nil when the node would have more than `maxNames` names.
    public static func updated(_ tags: [[UInt8]], identity: [UInt8], adding: NamePlace?, removing: NamePlace?,
                               metadataKey: SecureBuffer) -> [[UInt8]]? {
        var result = tags
        if let removing {
            let gone = tag(identity: identity, place: removing, metadataKey: metadataKey)
            result.removeAll { MetadataKey.matches(gone, $0) }
        }
        if let adding {
            let new = tag(identity: identity, place: adding, metadataKey: metadataKey)
            if !result.contains(where: { MetadataKey.matches(new, $0) }) { result.append(new) }
        }
        return result.count <= maxNames ? result : nil
    }
}
