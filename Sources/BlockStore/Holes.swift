// fallocate PUNCH_HOLE and ZERO_RANGE. A sealed block before the last that is all zero
// bytes on disk reads as zeros (BlockIO.open), so every such block the range covers whole becomes a
// hole in the backing file (its sealed bytes punched out); a block it covers in part
// is rewritten with zeros in that part. Where the backing filesystem cannot punch,
// the whole blocks are written as sealed zeros instead.
import CLinux
import DataProtection
import Glibc
import SystemCalls

extension BlockIO {
    /// Zeroes plaintext [offset, offset+length) of the file; `extend` (ZERO_RANGE
    /// without KEEP_SIZE) grows the file to the end of the range. Caller holds the
    /// file's lock (exclusive) and has checked the key.
    public static func zeroRange(_ file: SealedFile, key: SecureBuffer, offset: Int, length: Int, extend: Bool,
                          pool: BufferPool) throws(Errno) {
        // Past the largest file, as fallocate(2) says: EFBIG, whatever the mode.
        guard let end = BlockLayout.end(offset: offset, count: length) else { throw Errno.fileTooLarge }
        let size = file.plainSize
        let inside = min(end, size)
        if offset < inside {
            // Whole blocks: a short last block counts as whole when the range reaches EOF.
            let firstWhole = (offset + blockSize - 1) / blockSize
            // The last block is never punched: it must stay sealed as the last.
            let wholeEnd = min(inside == size ? (size + blockSize - 1) / blockSize : inside / blockSize,
                               BlockLayout.lastBlock(plainSize: size))
            if firstWhole >= wholeEnd {
                try writeZeros(file, key: key, at: offset, count: inside - offset, pool: pool)
            } else {
                let head = firstWhole * blockSize
                if offset < head {
                    try writeZeros(file, key: key, at: offset, count: head - offset, pool: pool)
                }
                let from = BlockLayout.backingOffset(ofBlock: firstWhole)
                let to = min(BlockLayout.backingOffset(ofBlock: wholeEnd), BlockLayout.backingSize(plainSize: size))
                let punch = FallocateMode.punchHole | FallocateMode.keepSize
                if CLinux.fallocate(file.fd, punch, off_t(from), off_t(to - from)) != 0 {
                    guard errno == EOPNOTSUPP || errno == ENOSYS else { throw Errno.current }
                    try writeZeros(file, key: key, at: head, count: min(wholeEnd * blockSize, size) - head, pool: pool)
                }
                let tail = wholeEnd * blockSize
                if tail < inside {
                    try writeZeros(file, key: key, at: tail, count: inside - tail, pool: pool)
                }
            }
        }
        if extend && end > file.plainSize {
            try resize(file, key: key, to: end, pool: pool)
        }
    }

    /// Writes `count` zero bytes at plaintext `offset`, a megabyte at a time.
    public static func writeZeros(_ file: SealedFile, key: SecureBuffer, at offset: Int, count: Int,
                                  pool: BufferPool) throws(Errno) {
        guard count > 0 else { return }
        let chunk = min(count, 1 << 20)
        let zeros = UnsafeMutableRawBufferPointer.allocate(byteCount: chunk, alignment: 16)
        defer { zeros.deallocate() }
        zeros.initializeMemory(as: UInt8.self, repeating: 0)
        var done = 0
        while done < count {
            let n = min(chunk, count - done)
            _ = try write(file, key: key, data: UnsafeRawBufferPointer(rebasing: zeros[0..<n]), offset: offset + done, pool: pool)
            done += n
        }
    }
}
