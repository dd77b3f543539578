// The data path: plaintext byte ranges to sealed blocks and back. Every block is
// sealed with a fresh random nonce and bound to the file's identity and its block
// number, so a block moved, swapped or altered fails to open and reads as EIO.
// A block of all zero bytes is a hole (a sparse region never written) and reads as
// zeros. One pread or pwrite per request; buffers come from the pool.
import CLinux
import DataProtection
import Glibc

enum BlockIO {
    static let blockSize = BlockLayout.plainBlockSize
    static let cipherSize = BlockLayout.cipherBlockSize

    /// Additional data for a block: file identity ‖ block number (little-endian).
    @inline(__always)
    static func withAdditionalData<R>(_ file: OpenFile, block: Int, _ body: (UnsafeRawBufferPointer) -> R) -> R {
        withUnsafeTemporaryAllocation(byteCount: 24, alignment: 8) { ad in
            file.fileID.withUnsafeBytes { ad.baseAddress?.copyMemory(from: $0.start, byteCount: 16) }
            ad.storeBytes(of: UInt64(block).littleEndian, toByteOffset: 16, as: UInt64.self)
            return body(UnsafeRawBufferPointer(ad))
        }
    }

    static func isAllZero(_ bytes: UnsafeRawBufferPointer) -> Bool {
        var index = 0
        let words = bytes.count / 8
        while index < words {
            if bytes.loadUnaligned(fromByteOffset: index * 8, as: UInt64.self) != 0 { return false }
            index += 1
        }
        for i in words * 8..<bytes.count where bytes[i] != 0 { return false }
        return true
    }

    /// Opens one sealed block into `output`; false when it is forged or damaged.
    static func openBlock(_ file: OpenFile, key: SecureBuffer, block: Int,
                          sealed: UnsafeRawBufferPointer, into output: UnsafeMutableRawBufferPointer) -> Bool {
        let ok = withAdditionalData(file, block: block) {
            AEAD.open(sealed, additionalData: $0, key: key.pointer, into: output)
        }
        if ok { return true }
        guard isAllZero(sealed) else { return false }
        output.initializeMemory(as: UInt8.self, repeating: 0)
        return true
    }

    static func sealBlock(_ file: OpenFile, key: SecureBuffer, block: Int,
                          plain: UnsafeRawBufferPointer, into output: UnsafeMutableRawBufferPointer) {
        withAdditionalData(file, block: block) {
            AEAD.seal(plain, additionalData: $0, key: key.pointer, into: output)
        }
    }

    static func preadAll(_ fd: Int32, _ buffer: UnsafeMutableRawBufferPointer, at offset: Int) -> Int {
        var done = 0
        while done < buffer.count {
            let n = pread(fd, buffer.start + done, buffer.count - done, off_t(offset + done))
            if n < 0 { if errno == EINTR { continue }; return -Int(errno) }
            if n == 0 { break }
            done += n
        }
        return done
    }

    static func pwriteAll(_ fd: Int32, _ buffer: UnsafeRawBufferPointer, at offset: Int) -> Int32 {
        var done = 0
        while done < buffer.count {
            let n = pwrite(fd, buffer.start + done, buffer.count - done, off_t(offset + done))
            if n < 0 { if errno == EINTR { continue }; return -errno }
            done += n
        }
        return 0
    }

    // MARK: Read

    /// Reads plaintext [offset, offset+count) into `output`; returns bytes read or -errno.
    /// Caller holds the file's lock (shared) and has checked the key.
    static func read(_ file: OpenFile, key: SecureBuffer, into output: UnsafeMutableRawBufferPointer,
                     offset: Int, pool: BufferPool) -> Int {
        let size = file.plainSize
        guard offset < size else { return 0 }
        let count = min(output.count, size - offset)
        let blocks = BlockLayout.blocks(offset: offset, count: count)
        return pool.withBuffer { buffer -> Int in
            var produced = 0
            var block = blocks.lowerBound
            while block < blocks.upperBound {
                // As many blocks as fit in one buffer, in one pread.
                let batchEnd = min(blocks.upperBound, block + (buffer.count - blockSize) / cipherSize)
                let backingStart = BlockLayout.backingOffset(ofBlock: block)
                let lastLength = BlockLayout.plainLength(ofBlock: batchEnd - 1, plainSize: size)
                let wanted = (batchEnd - 1 - block) * cipherSize + lastLength + BlockLayout.blockOverhead
                let got = preadAll(file.fd, UnsafeMutableRawBufferPointer(rebasing: buffer[0..<wanted]), at: backingStart)
                if got < 0 { return got }
                guard got == wanted else { return -Int(EIO) }
                let scratch = UnsafeMutableRawBufferPointer(rebasing: buffer[(buffer.count - blockSize)...])
                for current in block..<batchEnd {
                    let plainLength = BlockLayout.plainLength(ofBlock: current, plainSize: size)
                    let sealedStart = (current - block) * cipherSize
                    let sealed = UnsafeRawBufferPointer(rebasing: buffer[sealedStart..<sealedStart + plainLength + BlockLayout.blockOverhead])
                    let blockStart = current * blockSize
                    let from = max(offset, blockStart) - blockStart
                    let to = min(offset + count, blockStart + plainLength) - blockStart
                    let destination = max(offset, blockStart) - offset
                    if from == 0 && to == plainLength {
                        let target = UnsafeMutableRawBufferPointer(rebasing: output[destination..<destination + plainLength])
                        guard openBlock(file, key: key, block: current, sealed: sealed, into: target) else { return -Int(EIO) }
                    } else {
                        let target = UnsafeMutableRawBufferPointer(rebasing: scratch[0..<plainLength])
                        guard openBlock(file, key: key, block: current, sealed: sealed, into: target) else { return -Int(EIO) }
                        UnsafeMutableRawBufferPointer(rebasing: output[destination..<destination + to - from])
                            .copyMemory(from: UnsafeRawBufferPointer(rebasing: scratch[from..<to]))
                    }
                    produced += to - from
                }
                block = batchEnd
            }
            return produced
        }
    }

    /// Decrypts one existing block into `output` (its plain length); false when damaged.
    static func readBlock(_ file: OpenFile, key: SecureBuffer, block: Int, size: Int,
                          sealedScratch: UnsafeMutableRawBufferPointer, into output: UnsafeMutableRawBufferPointer) -> Int32 {
        let plainLength = BlockLayout.plainLength(ofBlock: block, plainSize: size)
        guard plainLength > 0 else { return 0 }
        let sealed = UnsafeMutableRawBufferPointer(rebasing: sealedScratch[0..<plainLength + BlockLayout.blockOverhead])
        let got = preadAll(file.fd, sealed, at: BlockLayout.backingOffset(ofBlock: block))
        if got < 0 { return Int32(got) }
        guard got == sealed.count else { return -EIO }
        let target = UnsafeMutableRawBufferPointer(rebasing: output[0..<plainLength])
        return openBlock(file, key: key, block: block, sealed: UnsafeRawBufferPointer(sealed), into: target) ? 0 : -EIO
    }

    // MARK: Write

    /// Writes `data` at plaintext `offset`; returns bytes written or -errno.
    /// Caller holds the file's lock (exclusive) and has checked the key.
    static func write(_ file: OpenFile, key: SecureBuffer, data: UnsafeRawBufferPointer, offset: Int,
                      pool: BufferPool) -> Int {
        guard data.count > 0 else { return 0 }
        let size = file.plainSize
        let end = offset + data.count
        // Space first: a full disk must fail the write before any block changes.
        let reserve = reserveSpace(file, plainSize: max(size, end))
        if reserve != 0 { return Int(reserve) }
        // A short last block that the write leaves behind must become a full block.
        if offset > size && size % blockSize != 0 && size / blockSize < offset / blockSize {
            let rc = resizeLastBlock(file, key: key, size: size, newLength: blockSize, pool: pool)
            if rc != 0 { return Int(rc) }
        }
        let oldSize = file.plainSize
        let newSize = max(oldSize, end)
        let blocks = BlockLayout.blocks(offset: offset, count: data.count)
        return pool.withBuffer { buffer -> Int in
            let scratch = UnsafeMutableRawBufferPointer(rebasing: buffer[(buffer.count - 2 * cipherSize)...])
            let plainScratch = UnsafeMutableRawBufferPointer(rebasing: scratch[0..<blockSize])
            let sealedScratch = UnsafeMutableRawBufferPointer(rebasing: scratch[blockSize...])
            let capacity = (buffer.count - 2 * cipherSize) / cipherSize
            var block = blocks.lowerBound
            var consumed = 0
            while block < blocks.upperBound {
                let batchEnd = min(blocks.upperBound, block + capacity)
                var used = 0
                for current in block..<batchEnd {
                    let blockStart = current * blockSize
                    let existing = BlockLayout.plainLength(ofBlock: current, plainSize: oldSize)
                    let newLength = BlockLayout.plainLength(ofBlock: current, plainSize: newSize)
                    let from = max(offset, blockStart) - blockStart
                    let to = min(end, blockStart + blockSize) - blockStart
                    let source = UnsafeRawBufferPointer(rebasing: data[(blockStart + from - offset)..<(blockStart + to - offset)])
                    let sealed = UnsafeMutableRawBufferPointer(rebasing: buffer[used..<used + newLength + BlockLayout.blockOverhead])
                    if from == 0 && to == newLength {
                        sealBlock(file, key: key, block: current, plain: source, into: sealed)
                    } else {
                        let plain = UnsafeMutableRawBufferPointer(rebasing: plainScratch[0..<newLength])
                        plain.initializeMemory(as: UInt8.self, repeating: 0)
                        if existing > 0 {
                            let rc = readBlock(file, key: key, block: current, size: oldSize,
                                               sealedScratch: sealedScratch, into: plainScratch)
                            if rc != 0 { return Int(rc) }
                        }
                        UnsafeMutableRawBufferPointer(rebasing: plain[from..<to]).copyMemory(from: source)
                        sealBlock(file, key: key, block: current, plain: UnsafeRawBufferPointer(plain), into: sealed)
                    }
                    used += sealed.count
                    consumed += to - from
                }
                let rc = pwriteAll(file.fd, UnsafeRawBufferPointer(rebasing: buffer[0..<used]),
                                   at: BlockLayout.backingOffset(ofBlock: block))
                if rc != 0 { return Int(rc) }
                file.plainSize = max(file.plainSize, min(end, batchEnd * blockSize))
                block = batchEnd
            }
            return consumed
        }
    }

    /// Reserves backing space before growing, so a full disk fails the write before
    /// anything is overwritten.
    static func reserveSpace(_ file: OpenFile, plainSize: Int) -> Int32 {
        let current = BlockLayout.backingSize(plainSize: file.plainSize)
        let needed = BlockLayout.backingSize(plainSize: plainSize)
        guard needed > current else { return 0 }
        // KEEP_SIZE: ext4 grows i_size as it allocates, so a plain fallocate that
        // fails halfway would leave a size that no longer matches the blocks.
        if fallocate(file.fd, 0x01 /* FALLOC_FL_KEEP_SIZE */, off_t(current), off_t(needed - current)) != 0 {
            if errno == ENOSPC || errno == EDQUOT { return -errno }
        }
        return 0
    }

    /// Re-seals the last (short) block with a new plaintext length, zero-padded.
    static func resizeLastBlock(_ file: OpenFile, key: SecureBuffer, size: Int, newLength: Int, pool: BufferPool) -> Int32 {
        let last = (size - 1) / blockSize
        return pool.withBuffer { buffer -> Int32 in
            let plain = UnsafeMutableRawBufferPointer(rebasing: buffer[0..<blockSize])
            plain.initializeMemory(as: UInt8.self, repeating: 0)
            let sealedScratch = UnsafeMutableRawBufferPointer(rebasing: buffer[blockSize..<blockSize + cipherSize])
            let rc = readBlock(file, key: key, block: last, size: size, sealedScratch: sealedScratch, into: plain)
            if rc != 0 { return rc }
            let sealed = UnsafeMutableRawBufferPointer(rebasing: buffer[blockSize + cipherSize..<blockSize + cipherSize + newLength + BlockLayout.blockOverhead])
            sealBlock(file, key: key, block: last, plain: UnsafeRawBufferPointer(rebasing: plain[0..<newLength]), into: sealed)
            let written = pwriteAll(file.fd, UnsafeRawBufferPointer(sealed), at: BlockLayout.backingOffset(ofBlock: last))
            if written != 0 { return written }
            file.plainSize = last * blockSize + newLength
            return 0
        }
    }

    // MARK: Truncate

    /// Sets the plaintext size. A content change: without the file key (its class is
    /// unavailable), EPERM.
    static func resize(_ file: OpenFile, key: SecureBuffer?, to newSize: Int, pool: BufferPool) -> Int32 {
        guard let key else { return -EPERM }
        let size = file.plainSize
        guard newSize != size else { return 0 }
        if newSize > size {
            if size % blockSize != 0 {
                let lastStart = (size - 1) / blockSize * blockSize
                let newLength = min(blockSize, newSize - lastStart)
                let reserve = reserveSpace(file, plainSize: lastStart + newLength)
                if reserve != 0 { return reserve }
                let rc = resizeLastBlock(file, key: key, size: size, newLength: newLength, pool: pool)
                if rc != 0 { return rc }
            }
        } else if newSize % blockSize != 0 {
            let rc = pool.withBuffer { buffer -> Int32 in
                let block = newSize / blockSize
                let plain = UnsafeMutableRawBufferPointer(rebasing: buffer[0..<blockSize])
                let sealedScratch = UnsafeMutableRawBufferPointer(rebasing: buffer[blockSize..<blockSize + cipherSize])
                let rc = readBlock(file, key: key, block: block, size: size, sealedScratch: sealedScratch, into: plain)
                if rc != 0 { return rc }
                let newLength = newSize - block * blockSize
                let sealed = UnsafeMutableRawBufferPointer(rebasing: buffer[blockSize + cipherSize..<blockSize + cipherSize + newLength + BlockLayout.blockOverhead])
                sealBlock(file, key: key, block: block, plain: UnsafeRawBufferPointer(rebasing: plain[0..<newLength]), into: sealed)
                guard ftruncate(file.fd, off_t(BlockLayout.backingSize(plainSize: newSize))) == 0 else { return -errno }
                return pwriteAll(file.fd, UnsafeRawBufferPointer(sealed), at: BlockLayout.backingOffset(ofBlock: block))
            }
            if rc != 0 { return rc }
            file.plainSize = newSize
            return 0
        }
        guard ftruncate(file.fd, off_t(BlockLayout.backingSize(plainSize: newSize))) == 0 else { return -errno }
        file.plainSize = newSize
        return 0
    }
}
