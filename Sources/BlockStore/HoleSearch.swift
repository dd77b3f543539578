// The block-level half of lseek SEEK_DATA and SEEK_HOLE (the mount's lseek is in
// SandboxFS/Seek.swift): which plaintext blocks are holes in the backing file.
import DataProtection
import Glibc
import SystemCalls

extension BlockIO {
    /// Whether the last block opens to zeros only (a sparse file's tail, sealed).
    public static func lastBlockIsZeros(_ file: SealedFile, size: Int, pool: BufferPool) -> Bool {
        guard let key = file.key else { return false }
        let last = BlockLayout.lastBlock(plainSize: size)
        return pool.withBuffer { buffer -> Bool in
            let plain = UnsafeMutableRawBufferPointer(rebasing: buffer[0..<blockSize])
            let sealed = UnsafeMutableRawBufferPointer(rebasing: buffer[blockSize..<blockSize + cipherSize])
            guard (try? readBlock(file, key: key, block: last, size: size, sealedScratch: sealed, into: plain)) != nil else {
                return false
            }
            let length = BlockLayout.plainLength(ofBlock: last, plainSize: size)
            let zeros = isAllZero(UnsafeRawBufferPointer(rebasing: plain[0..<length]))
            plain.initializeMemory(as: UInt8.self, repeating: 0)
            return zeros
        }
    }

    /// The block whose sealed region holds backing offset `offset`.
    public static func block(atBacking offset: Int) -> Int {
        max(0, (offset - BlockLayout.headerSize) / cipherSize)
    }

    /// The first block at or after `from` with allocated sealed bytes (Int.max: none).
    public static func firstDataBlock(_ file: SealedFile, from: Int, size: Int, zeroLast: Bool) throws(Errno) -> Int {
        let none = Int.max / blockSize
        let data = Glibc.lseek(file.fd, off_t(BlockLayout.backingOffset(ofBlock: from)), SeekWhence.data)
        if data < 0 {
            guard errno == ENXIO else { throw Errno.current }
            return none
        }
        let found = max(from, block(atBacking: Int(data)))
        guard zeroLast else { return found }
        let last = BlockLayout.lastBlock(plainSize: size)
        // The last block's first allocated page may begin inside the block before it.
        if found >= last || (found == last - 1 && storedBytesAreZero(file, block: found)) { return none }
        return found
    }

    /// Whether a block's stored bytes are all zero (a hole).
    public static func storedBytesAreZero(_ file: SealedFile, block: Int) -> Bool {
        var stored = [UInt8](repeating: 0, count: cipherSize)
        file.readsAccess(false)
        let got = try? stored.withMutableBytes { (bytes) throws(Errno) in
            try preadAll(file.fd, bytes, at: BlockLayout.backingOffset(ofBlock: block))
        }
        return got == stored.count && stored.withUnsafeBytes { isAllZero($0) }
    }

    /// The first block at or after `from` whose whole sealed region is a backing hole
    /// (the end of the file when there is none).
    public static func firstHoleBlock(_ file: SealedFile, from: Int, size: Int, zeroLast: Bool) throws(Errno) -> Int {
        let last = BlockLayout.lastBlock(plainSize: size)
        let blocks = zeroLast ? last : (size + blockSize - 1) / blockSize
        var candidate = from
        while candidate < blocks {
            let hole = Glibc.lseek(file.fd, off_t(BlockLayout.backingOffset(ofBlock: candidate)), SeekWhence.hole)
            if hole < 0 { throw Errno.current }
            // The first block that starts inside (or after the start of) that hole.
            let first = block(atBacking: Int(hole) + cipherSize - 1)
            candidate = max(candidate, first)
            guard candidate < blocks else { break }
            let regionStart = BlockLayout.backingOffset(ofBlock: candidate)
            let regionEnd = regionStart + BlockLayout.plainLength(ofBlock: candidate, plainSize: size) + BlockLayout.blockOverhead
            let data = Glibc.lseek(file.fd, off_t(regionStart), SeekWhence.data)
            if data < 0 && errno != ENXIO { throw Errno.current }
            if data < 0 || Int(data) >= regionEnd { return candidate }
            candidate += 1
        }
        return blocks
    }
}
