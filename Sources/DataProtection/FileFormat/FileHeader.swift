// The header of every backing file (dpfs(5)): magic, format version, the cipher of the
// file's blocks, the file's random identity (bound into every block), and two key
// slots. Each slot carries a MAC under the metadata key over the header's first 24
// bytes, its own index and its contents, so neither the slot in force nor the class
// can be changed by editing the file. A class change writes the slot not in use with
// a higher generation, syncs, then zeroes the superseded slot and syncs again: at
// every instant at least one valid slot stands, and afterwards only the new one.

public struct FileHeader: Sendable, Equatable {
    public static let magic: [UInt8] = Array("DPFS".utf8)
    public static let version: UInt16 = 2
    public static let fileIDSize = 16
    static let prefixSize = 24
    static let slotOffset = 24
    static let slotSize = 128
    static let macSize = MetadataKey.macSize
    static let maxWrappedKeySize = slotSize - 10 - macSize

    public struct KeySlot: Sendable, Equatable {
        public var generation: UInt64
        public var protectionClass: ProtectionClass
        public var wrappedKey: [UInt8]
        /// The slot wraps a new file key that replaces the other slot's (a class raise,
        /// Rekey): while both stand, blocks may be under either key. Stored as the top
        /// bit of the class byte, under the slot's MAC.
        public var replacesKey: Bool

        public init(generation: UInt64, protectionClass: ProtectionClass, wrappedKey: [UInt8], replacesKey: Bool = false) {
            self.generation = generation
            self.protectionClass = protectionClass
            self.wrappedKey = wrappedKey
            self.replacesKey = replacesKey
        }
    }

    public var fileID: [UInt8]
    public var slots: [KeySlot?]  // always two entries
    public var cipher: BlockCipher
    /// The plaintext size a shrinking truncate is cutting the file to, while it runs
    /// (bytes 280–287: size + 1, little-endian; zero when none). Not authenticated, and
    /// need not be: it only says which block to try as the new last one, and only the
    /// file key can have sealed a block that opens there (BlockStore's InterruptedCut).
    public var pendingCut: Int?
    public static let cutMarkOffset = slotOffset + 2 * slotSize

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

    /// A superseded slot still standing (a class change cut short by a crash), to be zeroed.
    public var staleSlotIndex: Int? {
        slots[0] != nil && slots[1] != nil ? spareSlotIndex : nil
    }

    /// A raise's move to a new key cut short: the superseded slot holds the old key,
    /// which blocks not yet moved still need (Rekey). It goes only once they are moved.
    public var isRekeying: Bool {
        staleSlotIndex != nil && current?.replacesKey == true
    }

    public enum ParseError: Error, Equatable {
        case tooShort, badMagic, unsupportedVersion(UInt16), unsupportedCipher(UInt8), noValidSlot
    }

    /// Parses and authenticates a header; a slot whose MAC fails is empty.
    public init(parsing bytes: UnsafeRawBufferPointer, metadataKey: SecureBuffer) throws(ParseError) {
        guard bytes.count >= BlockLayout.headerSize else { throw .tooShort }
        guard Array(bytes[0..<4]) == Self.magic else { throw .badMagic }
        let version = UInt16(bytes[4]) | UInt16(bytes[5]) << 8
        guard version == Self.version else { throw .unsupportedVersion(version) }
        // A cipher this CPU cannot run (AES-256-GCM without AES-NI) is unsupported too.
        guard let cipher = BlockCipher(rawValue: bytes[6]), cipher.isUsable else {
            throw .unsupportedCipher(bytes[6])
        }
        self.cipher = cipher
        fileID = Array(bytes[8..<24])
        let prefix = Array(bytes[0..<Self.prefixSize])
        slots = (0..<2).map { index in
            let start = Self.slotOffset(index)
            return Self.parseSlot(Array(bytes[start..<start + Self.slotSize]), index: index,
                                  prefix: prefix, metadataKey: metadataKey)
        }
        guard current != nil else { throw .noValidSlot }
        var mark: UInt64 = 0
        for i in 0..<8 { mark |= UInt64(bytes[Self.cutMarkOffset + i]) << (8 * UInt64(i)) }
        // The mark is not sealed: one past the largest file is no cut dpfs made.
        pendingCut = mark > 0 && mark - 1 <= UInt64(BlockLayout.maxPlainSize) ? Int(mark - 1) : nil
    }

    /// The bytes of a cut mark for `plainSize` (nil: the cleared mark), written alone
    /// at `cutMarkOffset`.
    public static func cutMark(_ plainSize: Int?) -> [UInt8] {
        let stored = plainSize.map { UInt64($0) + 1 } ?? 0
        return (0..<8).map { UInt8(truncatingIfNeeded: stored >> (8 * UInt64($0))) }
    }

    static func parseSlot(_ raw: [UInt8], index: Int, prefix: [UInt8], metadataKey: SecureBuffer) -> KeySlot? {
        let body = Array(raw[0..<slotSize - macSize])
        guard MetadataKey.matches(mac(prefix: prefix, index: index, body: body, key: metadataKey),
                                  raw[(slotSize - macSize)...]) else { return nil }
        var generation: UInt64 = 0
        for i in 0..<8 { generation |= UInt64(body[i]) << (8 * UInt64(i)) }
        guard generation > 0, let protectionClass = ProtectionClass(rawValue: body[8] & ~replacesKeyBit) else { return nil }
        let length = Int(body[9])
        guard length <= maxWrappedKeySize else { return nil }
        return KeySlot(generation: generation, protectionClass: protectionClass,
                       wrappedKey: Array(body[10..<10 + length]), replacesKey: body[8] & replacesKeyBit != 0)
    }

    static func mac(prefix: [UInt8], index: Int, body: [UInt8], key: SecureBuffer) -> [UInt8] {
        var digest = [UInt8](repeating: 0, count: macSize)
        prefix.withUnsafeBytes { prefix in
            body.withUnsafeBytes { body in
                digest.withUnsafeMutableBytes { mac(prefix: prefix, index: index, body: body, key: key, into: $0) }
            }
        }
        return digest
    }

    private static let macDomain = Array("dpfs.header-slot.v2".utf8)

    /// A slot's MAC into `digest` (macSize bytes): its message assembled on the stack,
    /// so a create's header costs no allocations for it.
    static func mac(prefix: UnsafeRawBufferPointer, index: Int, body: UnsafeRawBufferPointer, key: SecureBuffer,
                    into digest: UnsafeMutableRawBufferPointer) {
        let length = macDomain.count + prefix.count + 1 + body.count
        withUnsafeTemporaryAllocation(byteCount: length, alignment: 1) { message in
            var at = 0
            func append(_ bytes: UnsafeRawBufferPointer) {
                UnsafeMutableRawBufferPointer(rebasing: message[at..<at + bytes.count]).copyMemory(from: bytes)
                at += bytes.count
            }
            macDomain.withUnsafeBytes { append($0) }
            append(prefix)
            withUnsafeBytes(of: UInt8(index)) { append($0) }
            append(body)
            Sodium.hash(UnsafeRawBufferPointer(message), key: key.bytes, into: digest)
        }
    }

    /// The header's first 24 bytes: magic, version, cipher, file ID.
    var prefix: [UInt8] {
        [UInt8](unsafeUninitializedCapacity: Self.prefixSize) { bytes, count in
            writePrefix(into: UnsafeMutableRawBufferPointer(bytes))
            count = Self.prefixSize
        }
    }

    private func writePrefix(into bytes: UnsafeMutableRawBufferPointer) {
        Self.magic.withUnsafeBytes { bytes.copyMemory(from: $0) }
        bytes[4] = UInt8(Self.version & 0xff)
        bytes[5] = UInt8(Self.version >> 8)
        bytes[6] = cipher.rawValue
        bytes[7] = 0
        fileID.withUnsafeBytes { UnsafeMutableRawBufferPointer(rebasing: bytes[8..<Self.prefixSize]).copyMemory(from: $0) }
    }

    /// The whole header block as written at offset 0.
    public func serialized(metadataKey: SecureBuffer) -> [UInt8] {
        [UInt8](unsafeUninitializedCapacity: BlockLayout.headerSize) { bytes, count in
            write(into: UnsafeMutableRawBufferPointer(bytes), metadataKey: metadataKey)
            count = BlockLayout.headerSize
        }
    }

    /// Writes the whole header block into the first `BlockLayout.headerSize` bytes of
    /// `bytes` (a new file's header and first block go out in one buffer).
    public func write(into bytes: UnsafeMutableRawBufferPointer, metadataKey: SecureBuffer) {
        precondition(bytes.count >= BlockLayout.headerSize && fileID.count == Self.fileIDSize)
        let header = UnsafeMutableRawBufferPointer(rebasing: bytes[0..<BlockLayout.headerSize])
        header.initializeMemory(as: UInt8.self, repeating: 0)
        writePrefix(into: header)
        for index in 0..<2 {
            guard let slot = slots[index] else { continue }
            let start = Self.slotOffset(index)
            writeSlot(slot, index: index, into: UnsafeMutableRawBufferPointer(rebasing: header[start..<start + Self.slotSize]),
                      prefix: UnsafeRawBufferPointer(rebasing: header[0..<Self.prefixSize]), metadataKey: metadataKey)
        }
    }

    /// One slot's bytes at `index`, for writing the spare slot alone.
    public func serializedSlot(_ slot: KeySlot, index: Int, metadataKey: SecureBuffer) -> [UInt8] {
        let prefix = self.prefix
        return [UInt8](unsafeUninitializedCapacity: Self.slotSize) { bytes, count in
            prefix.withUnsafeBytes {
                writeSlot(slot, index: index, into: UnsafeMutableRawBufferPointer(bytes), prefix: $0, metadataKey: metadataKey)
            }
            count = Self.slotSize
        }
    }

    /// A slot's body and MAC into `bytes` (slotSize), under the header's `prefix`.
    private func writeSlot(_ slot: KeySlot, index: Int, into bytes: UnsafeMutableRawBufferPointer,
                           prefix: UnsafeRawBufferPointer, metadataKey: SecureBuffer) {
        precondition(slot.wrappedKey.count <= Self.maxWrappedKeySize && bytes.count == Self.slotSize)
        bytes.initializeMemory(as: UInt8.self, repeating: 0)
        for i in 0..<8 { bytes[i] = UInt8(truncatingIfNeeded: slot.generation >> (8 * UInt64(i))) }
        bytes[8] = slot.protectionClass.rawValue | (slot.replacesKey ? Self.replacesKeyBit : 0)
        bytes[9] = UInt8(slot.wrappedKey.count)
        slot.wrappedKey.withUnsafeBytes {
            UnsafeMutableRawBufferPointer(rebasing: bytes[10..<10 + $0.count]).copyMemory(from: $0)
        }
        let bodySize = Self.slotSize - Self.macSize
        Self.mac(prefix: prefix, index: index, body: UnsafeRawBufferPointer(rebasing: bytes[0..<bodySize]),
                 key: metadataKey, into: UnsafeMutableRawBufferPointer(rebasing: bytes[bodySize...]))
    }

    static let replacesKeyBit: UInt8 = 0x80

    /// What an empty (zeroed) slot looks like on disk.
    public static let emptySlot = [UInt8](repeating: 0, count: slotSize)

    public static func slotOffset(_ index: Int) -> Int { slotOffset + index * slotSize }
}
