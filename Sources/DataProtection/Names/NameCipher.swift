// Encrypted names (SPEC §11): a file or directory name in the backing tree is the
// plaintext name sealed deterministically under the file-system name key, bound to its
// directory's random ID, so a lookup translates one component with no scan, and the
// same name in two directories looks unrelated. The construction is a synthetic IV
// (SIV) built from libsodium: IV = BLAKE2b-128 keyed with the SIV key over
// (directory ID ‖ name); ciphertext = XChaCha20 of the name under the stream key with
// nonce IV ‖ 0^8; stored = base64url(IV ‖ ciphertext). Decryption recomputes the IV,
// so a forged, altered or moved name does not decrypt. A name whose stored form would
// pass 255 bytes is stored as "dpfs-long.<hash>" with its full form in a side file
// (LongName). Symlink targets are sealed with a random nonce (they need no lookup).
import CSodium

public struct NameCipher: Sendable {
    public static let ivSize = 16
    /// Bytes a sealed symlink target adds before encoding: nonce and tag.
    public static let targetOverhead = 40
    public static let maxStoredName = 255
    private let sivKey: SecureBuffer
    private let streamKey: SecureBuffer
    private let targetKey: SecureBuffer

    /// The name keys of a device, derived from its secret: there in every lock state,
    /// as names are on iOS.
    public init(deviceSecret: SecureBuffer) {
        let nameKey = PasscodeKDF.deviceKey(deviceSecret: deviceSecret, purpose: "dpfs.names.v2")
        sivKey = PasscodeKDF.deviceKey(deviceSecret: nameKey, purpose: "dpfs.names.siv.v2")
        streamKey = PasscodeKDF.deviceKey(deviceSecret: nameKey, purpose: "dpfs.names.stream.v2")
        targetKey = PasscodeKDF.deviceKey(deviceSecret: nameKey, purpose: "dpfs.names.symlink.v2")
        nameKey.wipe()
    }

    // MARK: Names

    /// The stored form of `name` in the directory `directoryID`: its encrypted form, or,
    /// when that passes 255 bytes, a long-name stand-in (`isLong` then true; the caller
    /// keeps `encoded` in the side file); and the name's place (NameBinding).
    public func seal(_ name: [UInt8], directoryID: [UInt8]) -> (stored: String, encoded: String, isLong: Bool, place: NamePlace) {
        let iv = syntheticIV(name, directoryID: directoryID)
        var ciphertext = name
        xor(&ciphertext, iv: iv)
        let encoded = Base64URL.encode(iv + ciphertext)
        let place = NamePlace(iv: iv)
        guard encoded.utf8.count > Self.maxStoredName else { return (encoded, encoded, false, place) }
        return (LongName.standIn(for: encoded), encoded, true, place)
    }

    /// The plaintext of an encoded name (the stored form, or a long name's side file
    /// contents); nil when it is not a name sealed for this directory by this device.
    public func open(_ encoded: String, directoryID: [UInt8]) -> [UInt8]? {
        openPlaced(encoded, directoryID: directoryID)?.name
    }

    /// The plaintext and place (NameBinding) of an encoded name; nil as for `open`.
    public func openPlaced(_ encoded: String, directoryID: [UInt8]) -> (name: [UInt8], place: NamePlace)? {
        guard let bytes = Base64URL.decode(encoded), bytes.count > Self.ivSize else { return nil }
        let iv = Array(bytes[0..<Self.ivSize])
        var plain = Array(bytes[Self.ivSize...])
        xor(&plain, iv: iv)
        guard MetadataKey.matches(syntheticIV(plain, directoryID: directoryID), iv) else { return nil }
        return (plain, NamePlace(iv: iv))
    }

    private func syntheticIV(_ name: [UInt8], directoryID: [UInt8]) -> [UInt8] {
        var iv = [UInt8](repeating: 0, count: Self.ivSize)
        let message = [UInt8(directoryID.count)] + directoryID + name
        message.withUnsafeBytes { body in iv.withUnsafeMutableBytes { Sodium.hash(body, key: sivKey.bytes, into: $0) } }
        return iv
    }

    private func xor(_ bytes: inout [UInt8], iv: [UInt8]) {
        guard !bytes.isEmpty else { return }
        let nonce = iv + [UInt8](repeating: 0, count: 24 - Self.ivSize)
        let count = bytes.count
        bytes.withUnsafeMutableBytes { buffer in
            nonce.withUnsafeBytes { n in
                _ = crypto_stream_xchacha20_xor(buffer.start,
                                                buffer.start, UInt64(count),
                                                n.start,
                                                streamKey.bytes.start)
            }
        }
    }

    // MARK: Symlink targets

    /// A symlink target, sealed (XChaCha20-Poly1305, random nonce) and encoded.
    public func sealTarget(_ target: [UInt8]) -> String {
        let plain = target.withUnsafeBytes { SecureBuffer(copying: $0) }
        defer { plain.wipe() }
        return Base64URL.encode(AEAD.seal(plain, additionalData: Array("dpfs.symlink.v2".utf8), key: targetKey))
    }

    /// A stored target's plaintext; nil when forged or damaged.
    public func openTarget(_ stored: String) -> [UInt8]? {
        guard let sealed = Base64URL.decode(stored),
              let plain = AEAD.open(sealed, additionalData: Array("dpfs.symlink.v2".utf8), key: targetKey) else { return nil }
        defer { plain.wipe() }
        return Array(plain.bytes)
    }
}

/// Long names: the stored stand-in for an encoded name over 255 bytes, and its side file.
public enum LongName {
    public static let prefix = "dpfs-long."
    public static let sideFileSuffix = ".name"

    static func standIn(for encoded: String) -> String {
        var digest = [UInt8](repeating: 0, count: 32)
        Array(encoded.utf8).withUnsafeBytes { body in digest.withUnsafeMutableBytes { Sodium.hash(body, into: $0) } }
        return prefix + Base64URL.encode(digest)
    }

    public static func isStandIn(_ stored: String) -> Bool {
        stored.hasPrefix(prefix) && !stored.hasSuffix(sideFileSuffix)
    }

    public static func isSideFile(_ stored: String) -> Bool {
        stored.hasPrefix(prefix) && stored.hasSuffix(sideFileSuffix)
    }

    /// Whether `encoded` (a side file's contents) belongs to the stand-in `stored`.
    public static func matches(_ stored: String, encoded: String) -> Bool {
        standIn(for: encoded) == stored
    }
}

/// base64url without padding (RFC 4648 §5): the alphabet a file name may hold.
public enum Base64URL {
    static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)
    static let values: [Int8] = {
        var table = [Int8](repeating: -1, count: 256)
        for (index, char) in alphabet.enumerated() { table[Int(char)] = Int8(index) }
        return table
    }()

    public static func encode(_ bytes: [UInt8]) -> String {
        var out: [UInt8] = []
        out.reserveCapacity((bytes.count * 4 + 2) / 3)
        var index = 0
        while index + 3 <= bytes.count {
            let n = UInt32(bytes[index]) << 16 | UInt32(bytes[index + 1]) << 8 | UInt32(bytes[index + 2])
            out += [alphabet[Int(n >> 18)], alphabet[Int(n >> 12 & 63)], alphabet[Int(n >> 6 & 63)], alphabet[Int(n & 63)]]
            index += 3
        }
        let rest = bytes.count - index
        if rest == 1 {
            let n = UInt32(bytes[index]) << 16
            out += [alphabet[Int(n >> 18)], alphabet[Int(n >> 12 & 63)]]
        } else if rest == 2 {
            let n = UInt32(bytes[index]) << 16 | UInt32(bytes[index + 1]) << 8
            out += [alphabet[Int(n >> 18)], alphabet[Int(n >> 12 & 63)], alphabet[Int(n >> 6 & 63)]]
        }
        return String(decoding: out, as: UTF8.self)
    }

    public static func decode(_ text: String) -> [UInt8]? {
        let chars = Array(text.utf8)
        guard chars.count % 4 != 1 else { return nil }
        var out: [UInt8] = []
        out.reserveCapacity(chars.count * 3 / 4)
        var accumulator: UInt32 = 0
        var bits = 0
        for char in chars {
            let value = values[Int(char)]
            guard value >= 0 else { return nil }
            accumulator = accumulator << 6 | UInt32(value)
            bits += 6
            if bits >= 8 {
                bits -= 8
                out.append(UInt8(truncatingIfNeeded: accumulator >> UInt32(bits)))
            }
        }
        // Canonical form only: leftover bits must be zero, so each name has one encoding.
        guard accumulator & ((1 << UInt32(bits)) - 1) == 0 else { return nil }
        return out
    }
}
