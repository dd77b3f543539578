// Where plaintext bytes live in a backing file: a fixed header, then fixed-size
// blocks of ciphertext, each nonce ‖ sealed 4 KiB ‖ tag; the last block may be short,
// and an empty file has one empty last block, so every file ends in a block sealed as
// the last (cutting blocks off the end reads as EIO). The plaintext size follows from
// the backing size alone, so stat never decrypts.

public enum BlockLayout {
    public static let headerSize = 512
    public static let plainBlockSize = 4096
    public static let blockOverhead = BlockCipher.overhead  // 24-byte nonce field + 16-byte tag, any cipher
    public static let cipherBlockSize = plainBlockSize + blockOverhead

    /// The largest plaintext size a file can have: a whole number of blocks, one fewer
    /// than an Int can place, so that no backing size, backing offset or block number
    /// derived from a size at or below it (the block after the last among them)
    /// overflows. Every request that grows or addresses a file is held to it (EFBIG).
    public static let maxPlainSize = ((Int.max - headerSize) / cipherBlockSize - 1) * plainBlockSize

    /// Where plaintext range [offset, offset+count) ends; nil when it starts before 0,
    /// has a negative count, or ends past `maxPlainSize` (its sum overflowing an Int
    /// among them).
    public static func end(offset: Int, count: Int) -> Int? {
        guard offset >= 0, count >= 0 else { return nil }
        let (end, overflow) = offset.addingReportingOverflow(count)
        guard !overflow, end <= maxPlainSize else { return nil }
        return end
    }

    public static func plainSize(backingSize: Int) -> Int {
        let body = backingSize - headerSize
        guard body > 0 else { return 0 }
        let fullBlocks = body / cipherBlockSize
        let tail = body % cipherBlockSize
        return fullBlocks * plainBlockSize + max(tail - blockOverhead, 0)
    }

    public static func backingSize(plainSize: Int) -> Int {
        guard plainSize > 0 else { return headerSize + blockOverhead }
        let fullBlocks = plainSize / plainBlockSize
        let tail = plainSize % plainBlockSize
        return headerSize + fullBlocks * cipherBlockSize + (tail > 0 ? tail + blockOverhead : 0)
    }

    public static func backingOffset(ofBlock block: Int) -> Int {
        headerSize + block * cipherBlockSize
    }

    /// The blocks that plaintext range [offset, offset+count) touches.
    public static func blocks(offset: Int, count: Int) -> Range<Int> {
        guard count > 0 else { return offset / plainBlockSize ..< offset / plainBlockSize }
        return offset / plainBlockSize ..< (offset + count - 1) / plainBlockSize + 1
    }

    /// The block sealed as the last one: for an empty file, block 0 (empty).
    public static func lastBlock(plainSize: Int) -> Int {
        plainSize > 0 ? (plainSize - 1) / plainBlockSize : 0
    }

    /// Whether a backing file of this size ends where a block ends and holds at least
    /// the empty last block: anything else was cut short.
    public static func isWholeBacking(_ backingSize: Int) -> Bool {
        let body = backingSize - headerSize
        guard body >= blockOverhead else { return false }
        let tail = body % cipherBlockSize
        return tail == 0 || tail > blockOverhead || body == blockOverhead
    }

    /// Plaintext length of `block` in a file of `plainSize` bytes.
    public static func plainLength(ofBlock block: Int, plainSize: Int) -> Int {
        max(0, min(plainBlockSize, plainSize - block * plainBlockSize))
    }
}
