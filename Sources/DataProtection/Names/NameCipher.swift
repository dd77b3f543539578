// Encrypted names: a file or directory name in the backing tree is the
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
        let (encoded, place) = name.withUnsafeBytes { plain in
            sealRaw(plain, directoryID: directoryID) { (Base64URL.encode($0), $1) }
        }
        guard encoded.utf8.count > Self.maxStoredName else { return (encoded, encoded, false, place) }
        return (LongName.standIn(for: encoded), encoded, true, place)
    }

    /// `seal` as a lookup needs it: the stored form as a C string, made straight from the
    /// sealed bytes (no String for a name that fits), and for a long name the encoded
    /// form its side file holds.
    public func sealedCString(_ name: UnsafeRawBufferPointer, directoryID: [UInt8]) -> (stored: [CChar], longEncoded: String?, place: NamePlace) {
        sealRaw(name, directoryID: directoryID) { raw, place in
            let count = Base64URL.encodedCount(raw.count)
            guard count <= Self.maxStoredName else {
                let encoded = Base64URL.encode(raw)
                return (Array(LongName.standIn(for: encoded).utf8CString), encoded, place)
            }
            // Encoded on the stack, then copied: an array made uninitialized or filled
            // goes through the standard library's unspecialized code, which looks the
            // array's type up at run time (a few percent of a lookup's CPU).
            let stored = withUnsafeTemporaryAllocation(of: UInt8.self, capacity: count + 1) { out in
                _ = Base64URL.encode(raw, into: out)
                out[count] = 0
                return out.withMemoryRebound(to: CChar.self) { Array($0) }
            }
            return (stored, nil, place)
        }
    }

    /// IV ‖ ciphertext of `name`, on the stack, given to `body` with the name's place.
    private func sealRaw<R>(_ name: UnsafeRawBufferPointer, directoryID: [UInt8],
                            _ body: (UnsafeRawBufferPointer, NamePlace) -> R) -> R {
        withUnsafeTemporaryAllocation(byteCount: Self.ivSize + name.count, alignment: 16) { bytes -> R in
            let iv = UnsafeMutableRawBufferPointer(start: bytes.baseAddress, count: Self.ivSize)
            let sealed = UnsafeMutableRawBufferPointer(start: bytes.baseAddress.map { $0 + Self.ivSize }, count: name.count)
            syntheticIV(name, directoryID: directoryID, into: iv)
            sealed.baseAddress?.copyMemory(from: name.start, byteCount: name.count)
            xor(sealed, iv: UnsafeRawBufferPointer(iv))
            return body(UnsafeRawBufferPointer(bytes), NamePlace(iv: UnsafeRawBufferPointer(iv)))
        }
    }

    /// The plaintext of an encoded name (the stored form, or a long name's side file
    /// contents); nil when it is not a name sealed for this directory by this device.
    public func open(_ encoded: String, directoryID: [UInt8]) -> [UInt8]? {
        openPlaced(encoded, directoryID: directoryID)?.name
    }

    /// The plaintext and place (NameBinding) of an encoded name; nil as for `open`.
    public func openPlaced(_ encoded: String, directoryID: [UInt8]) -> (name: [UInt8], place: NamePlace)? {
        var encoded = encoded
        var place: NamePlace?
        let name = encoded.withUTF8 { text -> [UInt8]? in
            withUnsafeTemporaryAllocation(byteCount: Self.ivSize + Base64URL.decodedCount(text.count), alignment: 16) { scratch -> [UInt8]? in
                guard let start = scratch.baseAddress else { return nil }
                // The recomputed IV, then the decoded IV and ciphertext.
                let expected = UnsafeMutableRawBufferPointer(start: start, count: Self.ivSize)
                let decoded = UnsafeMutableRawBufferPointer(start: start + Self.ivSize, count: scratch.count - Self.ivSize)
                guard let count = Base64URL.decode(text, into: decoded), count > Self.ivSize else { return nil }
                let iv = UnsafeRawBufferPointer(start: decoded.baseAddress, count: Self.ivSize)
                let body = UnsafeMutableRawBufferPointer(start: start + 2 * Self.ivSize, count: count - Self.ivSize)
                xor(body, iv: iv)
                syntheticIV(UnsafeRawBufferPointer(body), directoryID: directoryID, into: expected)
                guard sodium_memcmp(expected.start, iv.start, Self.ivSize) == 0 else { return nil }
                place = NamePlace(iv: iv)
                return [UInt8](UnsafeRawBufferPointer(body))
            }
        }
        guard let name, let place else { return nil }
        return (name, place)
    }

    /// BLAKE2b-128 keyed with the SIV key over (length of the ID ‖ directory ID ‖ name).
    private func syntheticIV(_ name: UnsafeRawBufferPointer, directoryID: [UInt8], into iv: UnsafeMutableRawBufferPointer) {
        // The keyed state is on the stack, as in libsodium's one-shot hash, and zeroed.
        // It must be 64-byte aligned; asked of withUnsafeTemporaryAllocation, an
        // alignment past 16 puts it on the heap (a posix_memalign per lookup), so the
        // allocation is 16-aligned with room to align it here.
        withUnsafeTemporaryAllocation(byteCount: crypto_generichash_statebytes() + 63, alignment: 16) { room in
            let offset = (64 - Int(bitPattern: room.start) % 64) % 64
            let stateBytes = UnsafeMutableRawBufferPointer(rebasing: room[offset..<offset + crypto_generichash_statebytes()])
            let state = OpaquePointer(stateBytes.start)
            let key = sivKey.bytes
            _ = crypto_generichash_init(state, key.start, key.count, iv.count)
            var idLength = UInt8(truncatingIfNeeded: directoryID.count)
            _ = crypto_generichash_update(state, &idLength, 1)
            _ = directoryID.withUnsafeBytes { crypto_generichash_update(state, $0.start, UInt64($0.count)) }
            _ = crypto_generichash_update(state, name.start, UInt64(name.count))
            _ = crypto_generichash_final(state, iv.start, iv.count)
            sodium_memzero(stateBytes.baseAddress, stateBytes.count)
        }
    }

    /// XChaCha20 under the stream key, nonce IV ‖ 0^8, in place.
    private func xor(_ bytes: UnsafeMutableRawBufferPointer, iv: UnsafeRawBufferPointer) {
        guard !bytes.isEmpty else { return }
        var nonce: (UInt64, UInt64, UInt64) = (0, 0, 0)
        withUnsafeMutableBytes(of: &nonce) { n in
            n.copyMemory(from: iv)
            _ = crypto_stream_xchacha20_xor(bytes.start, bytes.start, UInt64(bytes.count), n.start, streamKey.bytes.start)
        }
    }

    // MARK: Symlink targets

    /// A symlink target, sealed (XChaCha20-Poly1305, random nonce) and encoded; a long
    /// target is bound to its stand-in (LongTarget), so that no other stand-in's file
    /// opens in its place.
    public func sealTarget(_ target: [UInt8], standIn: String = "") -> String {
        let plain = target.withUnsafeBytes { SecureBuffer(copying: $0) }
        defer { plain.wipe() }
        return Base64URL.encode(AEAD.seal(plain, additionalData: Array(("dpfs.symlink.v2" + standIn).utf8), key: targetKey))
    }

    /// A stored target's plaintext; nil when forged or damaged.
    public func openTarget(_ stored: String, standIn: String = "") -> [UInt8]? {
        guard let sealed = Base64URL.decode(stored),
              let plain = AEAD.open(sealed, additionalData: Array(("dpfs.symlink.v2" + standIn).utf8), key: targetKey) else { return nil }
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
/// libsodium's codec: free of branches on the data, which a hand-written one's
/// per-character switch mispredicted on a sealed name's random bytes; and strict (a
/// non-canonical encoding does not decode, so each name has one stored form).
public enum Base64URL {
    private static let variant = sodium_base64_VARIANT_URLSAFE_NO_PADDING

    public static func encode(_ bytes: [UInt8]) -> String {
        bytes.withUnsafeBytes { encode($0) }
    }

    public static func encode(_ bytes: UnsafeRawBufferPointer) -> String {
        let count = encodedCount(bytes.count)
        // Room for the NUL the codec ends with; the String is the characters before it.
        return String(unsafeUninitializedCapacity: count + 1) { encode(bytes, into: $0) }
    }

    /// Characters `count` bytes encode to.
    public static func encodedCount(_ count: Int) -> Int { (count * 4 + 2) / 3 }

    /// Encodes `bytes` into `out`, which must hold `encodedCount` characters and the
    /// NUL written after them: the count of characters.
    public static func encode(_ bytes: UnsafeRawBufferPointer, into out: UnsafeMutableBufferPointer<UInt8>) -> Int {
        let count = encodedCount(bytes.count)
        precondition(out.count > count, "base64url output needs room for its NUL")
        out.withMemoryRebound(to: CChar.self) { text in
            guard let start = text.baseAddress else { return }
            _ = sodium_bin2base64(start, text.count, bytes.baseAddress?.assumingMemoryBound(to: UInt8.self),
                                  bytes.count, variant)
        }
        return count
    }

    public static func decode(_ text: String) -> [UInt8]? {
        var text = text
        return text.withUTF8 { chars in
            var valid = true
            let bytes = [UInt8](unsafeUninitializedCapacity: decodedCount(chars.count)) { out, count in
                let written = decode(chars, into: UnsafeMutableRawBufferPointer(out))
                valid = written != nil
                count = written ?? 0
            }
            return valid ? bytes : nil
        }
    }

    /// At most how many bytes `count` characters decode to.
    static func decodedCount(_ count: Int) -> Int { count * 3 / 4 }

    /// Decodes `chars` into `out` (at least `decodedCount` bytes): the count written,
    /// nil when `chars` is not canonical base64url.
    static func decode(_ chars: UnsafeBufferPointer<UInt8>, into out: UnsafeMutableRawBufferPointer) -> Int? {
        if chars.isEmpty { return 0 }
        guard let start = out.baseAddress else { return nil }
        var written = 0
        let status = chars.withMemoryRebound(to: CChar.self) { text in
            // No characters to ignore and no end pointer: anything but the alphabet fails.
            sodium_base642bin(start.assumingMemoryBound(to: UInt8.self), out.count,
                              text.baseAddress, text.count, nil, &written, nil, variant)
        }
        return status == 0 ? written : nil
    }
}
