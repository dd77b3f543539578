// The header of every backing file (dpfs(5)): magic, format version, the file's random
// identity (bound into every block), and two key slots. A class change writes the slot
// not in use with a higher generation; a torn write fails that slot's checksum and the
// other slot still stands, so the change is atomic. Byte 6 names the cipher of the
// file's blocks (BlockCipher); a class change never touches it.

public struct FileHeader: Sendable, Equatable {
    public static let magic: [UInt8] = Array("DPFS".utf8)
    public static let version: UInt16 = 1
    public static let cipherXChaCha20Poly1305: UInt8 = BlockCipher.xchacha20Poly1305.rawValue
    public static let cipherAES256GCM: UInt8 = BlockCipher.aes256GCM.rawValue
    public static let fileIDSize = 16
    static let slotOffset = 24
    static let slotSize = 128
    static let checksumSize = 16
    static let maxWrappedKeySize = slotSize - 10 - checksumSize

    public struct KeySlot: Sendable, Equatable {
        public var generation: UInt64
        public var protectionClass: ProtectionClass
        public var wrappedKey: [UInt8]

        public init(generation: UInt64, protectionClass: ProtectionClass, wrappedKey: [UInt8]) {
            self.generation = generation
            self.protectionClass = protectionClass
            self.wrappedKey = wrappedKey
        }
    }

    public var fileID: [UInt8]
    public var slots: [KeySlot?]  // always two entries
    public var cipher: BlockCipher

    /// A new file's header: its blocks take `cipher` (by default AES-256-GCM where the
    /// CPU accelerates it, else XChaCha20-Poly1305).
    public init(fileID: [UInt8], slot: KeySlot, cipher: BlockCipher = .forNewFiles) {
        self.fileID = fileID
        self.slots = [slot, nil]
        self.cipher = cipher
    }

    /// The slot in force: the valid one with the highest generation.
    public var current: KeySlot? {
        slots.compactMap { $0 }.max { $0.generation < $1.generation }
    }

    /// Index of the slot a rewrap should overwrite.
    public var spareSlotIndex: Int {
        guard let first = slots[0], let second = slots[1] else { return slots[0] == nil ? 0 : 1 }
        return first.generation < second.generation ? 0 : 1
    }

    public enum ParseError: Error { case tooShort, badMagic, unsupportedVersion(UInt16), unsupportedCipher(UInt8), noValidSlot }

    public init(parsing bytes: UnsafeRawBufferPointer) throws {
        guard bytes.count >= BlockLayout.headerSize else { throw ParseError.tooShort }
        guard Array(bytes[0..<4]) == Self.magic else { throw ParseError.badMagic }
        let version = UInt16(bytes[4]) | UInt16(bytes[5]) << 8
        guard version == Self.version else { throw ParseError.unsupportedVersion(version) }
        // A cipher this CPU cannot run (AES-256-GCM without AES-NI) is unsupported too.
        guard let cipher = BlockCipher(rawValue: bytes[6]), cipher.isUsable else {
            throw ParseError.unsupportedCipher(bytes[6])
        }
        self.cipher = cipher
        fileID = Array(bytes[8..<24])
        slots = (0..<2).map { index in
            let start = Self.slotOffset + index * Self.slotSize
            return Self.parseSlot(UnsafeRawBufferPointer(rebasing: bytes[start..<start + Self.slotSize]),
                                  fileID: Array(bytes[8..<24]))
        }
        guard current != nil else { throw ParseError.noValidSlot }
    }

    static func parseSlot(_ raw: UnsafeRawBufferPointer, fileID: [UInt8]) -> KeySlot? {
        let body = UnsafeRawBufferPointer(rebasing: raw[0..<slotSize - checksumSize])
        guard checksum(body, fileID: fileID) == Array(raw[(slotSize - checksumSize)...]) else { return nil }
        var generation: UInt64 = 0
        for i in 0..<8 { generation |= UInt64(body[i]) << (8 * UInt64(i)) }
        guard generation > 0, let protectionClass = ProtectionClass(rawValue: body[8]) else { return nil }
        let length = Int(body[9])
        guard length <= maxWrappedKeySize else { return nil }
        return KeySlot(generation: generation, protectionClass: protectionClass,
                       wrappedKey: Array(body[10..<10 + length]))
    }

    static func checksum(_ body: UnsafeRawBufferPointer, fileID: [UInt8]) -> [UInt8] {
        var digest = [UInt8](repeating: 0, count: checksumSize)
        fileID.withUnsafeBytes { key in
            digest.withUnsafeMutableBytes { Sodium.hash(body, key: key, into: $0) }
        }
        return digest
    }

    /// The whole header block as written at offset 0.
    public func serialized() -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: BlockLayout.headerSize)
        bytes.replaceSubrange(0..<4, with: Self.magic)
        bytes[4] = UInt8(Self.version & 0xff)
        bytes[5] = UInt8(Self.version >> 8)
        bytes[6] = cipher.rawValue
        bytes.replaceSubrange(8..<24, with: fileID)
        for index in 0..<2 {
            if let slot = slots[index] {
                let start = Self.slotOffset + index * Self.slotSize
                bytes.replaceSubrange(start..<start + Self.slotSize, with: serializedSlot(slot))
            }
        }
        return bytes
    }

    /// One slot's bytes, for writing the spare slot alone.
    public func serializedSlot(_ slot: KeySlot) -> [UInt8] {
        precondition(slot.wrappedKey.count <= Self.maxWrappedKeySize)
        var body = [UInt8](repeating: 0, count: Self.slotSize - Self.checksumSize)
        for i in 0..<8 { body[i] = UInt8(truncatingIfNeeded: slot.generation >> (8 * UInt64(i))) }
        body[8] = slot.protectionClass.rawValue
        body[9] = UInt8(slot.wrappedKey.count)
        body.replaceSubrange(10..<10 + slot.wrappedKey.count, with: slot.wrappedKey)
        let sum = body.withUnsafeBytes { Self.checksum($0, fileID: fileID) }
        return body + sum
    }

    public static func slotOffset(_ index: Int) -> Int { slotOffset + index * slotSize }
}
