// lseek SEEK_DATA and SEEK_HOLE, so cp, tar -S and rsync --sparse see a sparse file's
// holes. A plaintext block is a hole when its whole sealed region in the backing file
// is a hole there (never written, or punched: it reads as zeros, see BlockIO.openBlock).
// A block that shares an allocated filesystem block with a neighbour counts as data:
// the answer may call zeros data, never data a hole. The last block is always sealed
// (it marks the end), so it counts as a hole when it opens to zeros only. Dirty mmap
// pages the kernel has not written back yet are written back first, so they are not
// taken for holes.
import CFuse
import DataProtection
import Glibc

extension SandboxFileSystem {
    func lseek(_ offset: off_t, _ whence: Int32, _ fi: UnsafeMutablePointer<fuse_file_info>?) -> off_t {
        guard let handle = Self.handle(fi) else { return off_t(-EBADF) }
        guard whence == SEEK_DATA || whence == SEEK_HOLE else { return off_t(-EINVAL) }
        let file = handle.file
        guard offset >= 0 else { return off_t(-ENXIO) }
        // Written-back first, outside the file's lock (the write-back comes as writes).
        for path in files.withPaths(of: file) { invalidate(path) }
        return file.reading { () -> off_t in
            let size = file.plainSize
            guard Int(offset) < size else { return off_t(-ENXIO) }
            let start = Int(offset) / BlockIO.blockSize
            let zeroLast = lastBlockIsZeros(file, size: size)
            let found = whence == SEEK_DATA ? Self.firstDataBlock(file, from: start, size: size, zeroLast: zeroLast)
                                            : Self.firstHoleBlock(file, from: start, size: size, zeroLast: zeroLast)
            switch found {
            case .failure(let rc): return off_t(rc.value)
            case .success(let block):
                let position = block * BlockIO.blockSize
                if whence == SEEK_DATA { return position < size ? off_t(max(Int(offset), position)) : off_t(-ENXIO) }
                return off_t(min(size, max(Int(offset), position)))
            }
        }
    }

    /// Whether the last block opens to zeros only (a sparse file's tail, sealed).
    func lastBlockIsZeros(_ file: OpenFile, size: Int) -> Bool {
        guard let key = file.key else { return false }
        let last = BlockLayout.lastBlock(plainSize: size)
        return pool.withBuffer { buffer -> Bool in
            let plain = UnsafeMutableRawBufferPointer(rebasing: buffer[0..<BlockIO.blockSize])
            let sealed = UnsafeMutableRawBufferPointer(rebasing: buffer[BlockIO.blockSize..<BlockIO.blockSize + BlockIO.cipherSize])
            guard BlockIO.readBlock(file, key: key, block: last, size: size, sealedScratch: sealed, into: plain) == 0 else {
                return false
            }
            let length = BlockLayout.plainLength(ofBlock: last, plainSize: size)
            let zeros = BlockIO.isAllZero(UnsafeRawBufferPointer(rebasing: plain[0..<length]))
            plain.initializeMemory(as: UInt8.self, repeating: 0)
            return zeros
        }
    }

    /// The block whose sealed region holds backing offset `offset`.
    static func block(atBacking offset: Int) -> Int {
        max(0, (offset - BlockLayout.headerSize) / BlockIO.cipherSize)
    }

    /// The first block at or after `from` with allocated sealed bytes (Int.max: none).
    static func firstDataBlock(_ file: OpenFile, from: Int, size: Int, zeroLast: Bool) -> Result<Int, FSErrno> {
        let none = Int.max / BlockIO.blockSize
        let data = Glibc.lseek(file.fd, off_t(BlockLayout.backingOffset(ofBlock: from)), SEEK_DATA)
        if data < 0 { return errno == ENXIO ? .success(none) : .failure(FSErrno(-errno)) }
        let found = max(from, block(atBacking: Int(data)))
        guard zeroLast else { return .success(found) }
        let last = BlockLayout.lastBlock(plainSize: size)
        // The last block's first allocated page may begin inside the block before it.
        if found >= last || (found == last - 1 && storedBytesAreZero(file, block: found)) { return .success(none) }
        return .success(found)
    }

    /// Whether a block's stored bytes are all zero (a hole).
    static func storedBytesAreZero(_ file: OpenFile, block: Int) -> Bool {
        var stored = [UInt8](repeating: 0, count: BlockIO.cipherSize)
        let got = stored.withUnsafeMutableBytes { BlockIO.preadAll(file.fd, $0, at: BlockLayout.backingOffset(ofBlock: block)) }
        return got == stored.count && stored.withUnsafeBytes { BlockIO.isAllZero($0) }
    }

    /// The first block at or after `from` whose whole sealed region is a backing hole
    /// (the end of the file when there is none).
    static func firstHoleBlock(_ file: OpenFile, from: Int, size: Int, zeroLast: Bool) -> Result<Int, FSErrno> {
        let last = BlockLayout.lastBlock(plainSize: size)
        let blocks = zeroLast ? last : (size + BlockIO.blockSize - 1) / BlockIO.blockSize
        var candidate = from
        while candidate < blocks {
            let hole = Glibc.lseek(file.fd, off_t(BlockLayout.backingOffset(ofBlock: candidate)), SEEK_HOLE)
            if hole < 0 { return .failure(FSErrno(-errno)) }
            // The first block that starts inside (or after the start of) that hole.
            let first = block(atBacking: Int(hole) + BlockIO.cipherSize - 1)
            candidate = max(candidate, first)
            guard candidate < blocks else { break }
            let regionStart = BlockLayout.backingOffset(ofBlock: candidate)
            let regionEnd = regionStart + BlockLayout.plainLength(ofBlock: candidate, plainSize: size) + BlockLayout.blockOverhead
            let data = Glibc.lseek(file.fd, off_t(regionStart), SEEK_DATA)
            if data < 0 && errno != ENXIO { return .failure(FSErrno(-errno)) }
            if data < 0 || Int(data) >= regionEnd { return .success(candidate) }
            candidate += 1
        }
        return .success(blocks)
    }
}
