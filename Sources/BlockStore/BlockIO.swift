// The data path: plaintext byte ranges to sealed blocks and back. Every block is
// sealed with a fresh random nonce and bound to the file's identity, its block number
// and whether it is the file's last block (associated data file ID ‖ block number,
// top bit set for the last), so a block moved, swapped or altered, or a file cut
// short by whole blocks, fails to open and reads as EIO. Each file's blocks take the
// cipher its header names (BlockCipher). A block of all zero bytes before the last is
// a hole (a sparse region never written) and reads as zeros. One pread or pwrite per request; the buffer, the
// request's expanded key and its nonces come from a pool slot, and the blocks of a
// large request are sealed or opened on every core (BlockWorkers).
import CLinux
import DataProtection
import Glibc
import SystemCalls

public enum BlockIO {
    public static let blockSize = BlockLayout.plainBlockSize
    public static let cipherSize = BlockLayout.cipherBlockSize
    public static let overhead = BlockLayout.blockOverhead
    public static let nonceField = BlockCipher.nonceFieldSize

    /// Additional data for a file's blocks: file identity ‖ block number (little-endian,
    /// top bit set for the file's last block), built once per request, on the stack.
    public struct AdditionalData {
        static let count = 24
        private var words: (UInt64, UInt64, UInt64) = (0, 0, 0)

        init(_ fileID: [UInt8]) {
            fileID.withUnsafeBytes { id in
                withUnsafeMutableBytes(of: &words) { $0.copyMemory(from: UnsafeRawBufferPointer(rebasing: id.prefix(16))) }
            }
        }

        static let lastBlockFlag: UInt64 = 1 << 63

        @inline(__always)
        func with<R>(block: Int, last: Bool, _ body: (UnsafeRawPointer) -> R) -> R {
            var words = self.words
            words.2 = (UInt64(block) | (last ? Self.lastBlockFlag : 0)).littleEndian
            return withUnsafeBytes(of: &words) { body($0.start) }
        }
    }

    public static func isAllZero(_ bytes: UnsafeRawBufferPointer) -> Bool {
        var index = 0
        let words = bytes.count / 8
        while index < words {
            if bytes.loadUnaligned(fromByteOffset: index * 8, as: UInt64.self) != 0 { return false }
            index += 1
        }
        for i in words * 8..<bytes.count where bytes[i] != 0 { return false }
        return true
    }

    /// Opens one sealed block into `output`; false when it is forged or damaged. The
    /// last block must be sealed as the last and cannot be a hole. Before the last, a
    /// block sealed as the last is accepted too: an extending write seals the new last
    /// block before it seals the old one again, and a kill in between leaves that.
    @inline(__always)
    public static func open(_ session: BlockSession, _ ad: AdditionalData, block: Int, last: Bool,
                     sealed: UnsafeRawBufferPointer, into output: UnsafeMutableRawBufferPointer) -> Bool {
        func attempt(_ asLast: Bool) -> Bool {
            ad.with(block: block, last: asLast) {
                session.open(sealed, additionalData: $0, additionalDataCount: AdditionalData.count, into: output)
            }
        }
        if attempt(last) { return true }
        if last { return false }
        if isAllZero(sealed) {
            output.initializeMemory(as: UInt8.self, repeating: 0)
            return true
        }
        return attempt(true)
    }

    /// Seals one block into `output`, whose nonce field already holds its nonce.
    @inline(__always)
    public static func seal(_ session: BlockSession, _ ad: AdditionalData, block: Int, last: Bool,
                     plain: UnsafeRawBufferPointer, into output: UnsafeMutableRawBufferPointer) {
        ad.with(block: block, last: last) {
            session.seal(plain, additionalData: $0, additionalDataCount: AdditionalData.count, into: output)
        }
    }

    /// Seals one block with the file's key alone and `nonce` (fresh random bytes, at
    /// least the cipher's nonce size), or, nil, a nonce from the system generator.
    public static func sealBlock(cipher: BlockCipher, fileID: [UInt8], key: SecureBuffer, block: Int, last: Bool,
                          plain: UnsafeRawBufferPointer, nonce: UnsafeRawBufferPointer? = nil,
                          into output: UnsafeMutableRawBufferPointer) {
        let sealer = BlockSealer(cipher: cipher, key: key.pointer)
        let nonceField = UnsafeMutableRawBufferPointer(rebasing: output[0..<sealer.cipher.nonceSize])
        if let nonce {
            nonceField.copyMemory(from: UnsafeRawBufferPointer(rebasing: nonce[0..<nonceField.count]))
        } else {
            Sodium.fillRandom(nonceField)
        }
        sealer.withSession { seal($0, AdditionalData(fileID), block: block, last: last, plain: plain, into: output) }
    }

    public static func sealBlock(_ file: SealedFile, key: SecureBuffer, block: Int, last: Bool,
                          plain: UnsafeRawBufferPointer, into output: UnsafeMutableRawBufferPointer) {
        sealBlock(cipher: file.header.cipher, fileID: file.fileID, key: key, block: block, last: last,
                  plain: plain, into: output)
    }

    /// Writes a new, empty file: `header` and its empty last block, sealed with
    /// `blockNonce` (fresh random bytes, at least the cipher's nonce size), in one
    /// write: the block follows the header, whose serialized form fills its whole area.
    public static func writeNewFile(fd: Int32, header: FileHeader, key: SecureBuffer, metadataKey: SecureBuffer,
                                    blockNonce: [UInt8]) throws(Errno) {
        let blockStart = BlockLayout.headerSize
        try withUnsafeTemporaryAllocation(byteCount: blockStart + overhead, alignment: 16) { (all) throws(Errno) in
            header.write(into: all, metadataKey: metadataKey)
            blockNonce.withUnsafeBytes { nonce in
                sealBlock(cipher: header.cipher, fileID: header.fileID, key: key, block: 0, last: true,
                          plain: UnsafeRawBufferPointer(start: nil, count: 0), nonce: nonce,
                          into: UnsafeMutableRawBufferPointer(rebasing: all[blockStart...]))
            }
            try pwriteAll(fd, UnsafeRawBufferPointer(all), at: 0)
        }
    }

    /// The most one pwrite of sealed blocks hands the backing file. ext4 (6.16 and
    /// later) caches a file in folios as large as the writes that made them, and every
    /// later small write into a folio walks all its buffers, so a file written in large
    /// parts is slower to write into in small pieces later (docs/benchmarks.md). Eight
    /// system calls per 1 MiB request instead of one cost far less.
    public static let backingWritePart = 128 * 1024

    // MARK: Read

    /// Reads plaintext [offset, offset+count) into `output`; returns bytes read.
    /// Caller holds the file's lock (shared) and has checked the key.
    public static func read(_ file: SealedFile, key: SecureBuffer, into output: UnsafeMutableRawBufferPointer,
                     offset: Int, pool: BufferPool) throws(Errno) -> Int {
        let size = file.plainSize
        guard offset < size else { return 0 }
        let count = min(output.count, size - offset)
        let end = offset + count
        let blocks = BlockLayout.blocks(offset: offset, count: count)
        let lastBlock = BlockLayout.lastBlock(plainSize: size)
        let ad = AdditionalData(file.fileID)
        let cipher = file.header.cipher
        file.readsAccess(true)
        return try pool.withSlot { (slot) throws(Errno) -> Int in
            let buffer = slot.buffer
            let sealer = slot.sealer(cipher, key: key)
            defer { sealer.finish() }
            // [sealed blocks of one batch, from a page boundary … | one plaintext block of scratch]
            let capacity = (buffer.count - blockSize - 2 * directAlignment) / cipherSize
            let scratchStart = buffer.count - blockSize
            let scratch = UnsafeMutableRawBufferPointer(rebasing: buffer[scratchStart..<scratchStart + blockSize])
            let direct = blocks.count >= directReadBlocks ? DirectReader(file.fd) : nil
            defer { direct?.close() }
            var block = blocks.lowerBound
            while block < blocks.upperBound {
                // As many blocks as fit in one buffer, in one pread.
                let first = block
                let batchEnd = min(blocks.upperBound, block + capacity)
                let lastLength = BlockLayout.plainLength(ofBlock: batchEnd - 1, plainSize: size)
                let wanted = (batchEnd - 1 - first) * cipherSize + lastLength + overhead
                let backingStart = BlockLayout.backingOffset(ofBlock: first)
                var base = -1
                if let direct {
                    // EINVAL: the backing filesystem wants another alignment; read as usual.
                    do throws(Errno) { base = try direct.read(into: buffer, at: backingStart, count: wanted) } catch {
                        guard error == .invalid else { throw error }
                    }
                }
                if base < 0 {
                    let got = try preadAll(file.fd, UnsafeMutableRawBufferPointer(rebasing: buffer[0..<wanted]), at: backingStart)
                    guard got == wanted else { throw Errno.io }
                    base = 0
                }

                // Opens block `current`: straight into the output when the request
                // covers all of it, else through the scratch block (edges only).
                func openOne(_ session: BlockSession, _ current: Int) -> Bool {
                    let plainLength = BlockLayout.plainLength(ofBlock: current, plainSize: size)
                    let sealedStart = base + (current - first) * cipherSize
                    let sealed = UnsafeRawBufferPointer(rebasing: buffer[sealedStart..<sealedStart + plainLength + overhead])
                    let blockStart = current * blockSize
                    let from = max(offset, blockStart) - blockStart
                    let to = min(end, blockStart + plainLength) - blockStart
                    let destination = blockStart + from - offset
                    let last = current == lastBlock
                    if from == 0 && to == plainLength {
                        let target = UnsafeMutableRawBufferPointer(rebasing: output[destination..<destination + plainLength])
                        return open(session, ad, block: current, last: last, sealed: sealed, into: target)
                    }
                    let target = UnsafeMutableRawBufferPointer(rebasing: scratch[0..<plainLength])
                    guard open(session, ad, block: current, last: last, sealed: sealed, into: target) else { return false }
                    UnsafeMutableRawBufferPointer(rebasing: output[destination..<destination + to - from])
                        .copyMemory(from: UnsafeRawBufferPointer(rebasing: scratch[from..<to]))
                    return true
                }
                func isWhole(_ current: Int) -> Bool {
                    current * blockSize >= offset && min(size, (current + 1) * blockSize) <= end
                }
                var lower = first, upper = batchEnd
                let edgesOpen = sealer.withSession { session -> Bool in
                    if !isWhole(lower) {
                        guard openOne(session, lower) else { return false }
                        lower += 1
                    }
                    if upper > lower && !isWhole(upper - 1) {
                        guard openOne(session, upper - 1) else { return false }
                        upper -= 1
                    }
                    return true
                }
                guard edgesOpen else { throw Errno.io }
                let ok = BlockWorkers.shared.run(lower..<upper) { part in
                    sealer.withSession { session in
                        for current in part where !openOne(session, current) { return false }
                        return true
                    }
                }
                guard ok else { throw Errno.io }
                block = batchEnd
            }
            return count
        }
    }

    // MARK: Direct reads

    /// Requests of at least this many blocks (a sequential read: the kernel's read-ahead)
    /// read the backing file with O_DIRECT, straight into the request's buffer: no second
    /// copy of the ciphertext in the page cache, and no copy out of it.
    public static let directReadBlocks = 128
    public static let directAlignment = 4096

    /// An O_DIRECT descriptor of a backing file for one request (reopened through
    /// /proc/self/fd, as O_DIRECT is a flag of the open file, shared by every thread).
    struct DirectReader {
        let fd: Int32

        init?(_ backing: Int32) {
            let opened = try? withProcPath(backing) { (path) throws(Errno) in
                try Errno.check(Glibc.open(path, O_RDONLY | O_CLOEXEC | OpenFlag.direct))
            }
            guard let fd = opened else { return nil }
            self.fd = fd
        }

        func close() { _ = Glibc.close(fd) }

        /// Reads backing bytes [offset, offset+count) into `buffer` through aligned
        /// O_DIRECT reads; returns where in `buffer` they start.
        func read(into buffer: UnsafeMutableRawBufferPointer, at offset: Int, count: Int) throws(Errno) -> Int {
            let start = offset & ~(directAlignment - 1)
            let end = (offset + count + directAlignment - 1) & ~(directAlignment - 1)
            let got = try preadAll(fd, UnsafeMutableRawBufferPointer(rebasing: buffer[0..<end - start]), at: start)
            guard got >= offset + count - start else { throw Errno.io }
            return offset - start
        }
    }

    /// Decrypts one existing block into `output` (its plain length); EIO when damaged.
    public static func readBlock(_ file: SealedFile, key: SecureBuffer, block: Int, size: Int,
                          sealedScratch: UnsafeMutableRawBufferPointer, into output: UnsafeMutableRawBufferPointer,
                          session: BlockSession? = nil) throws(Errno) {
        let plainLength = BlockLayout.plainLength(ofBlock: block, plainSize: size)
        // The empty last block of an empty file is checked where the file is opened.
        guard plainLength > 0 else { return }
        let last = block == BlockLayout.lastBlock(plainSize: size)
        let sealed = UnsafeMutableRawBufferPointer(rebasing: sealedScratch[0..<plainLength + overhead])
        // One block read for a write, a truncate, a hole search or a check: no access.
        file.readsAccess(false)
        let got = try preadAll(file.fd, sealed, at: BlockLayout.backingOffset(ofBlock: block))
        guard got == sealed.count else { throw Errno.io }
        let target = UnsafeMutableRawBufferPointer(rebasing: output[0..<plainLength])
        let ad = AdditionalData(file.fileID)
        let opened: Bool
        if let session {
            opened = open(session, ad, block: block, last: last, sealed: UnsafeRawBufferPointer(sealed), into: target)
        } else {
            opened = BlockSealer(cipher: file.header.cipher, key: key.pointer).withSession {
                open($0, ad, block: block, last: last, sealed: UnsafeRawBufferPointer(sealed), into: target)
            }
        }
        guard opened else { throw Errno.io }
    }

    /// Whether full block `block` opens as an ordinary block, not the file's last, its
    /// plaintext then in `output`: the last stored block of a file cut short by whole
    /// blocks does (fsck), where the size alone places it last.
    public static func opensAsOrdinaryBlock(_ file: SealedFile, key: SecureBuffer, block: Int,
                                            sealedScratch: UnsafeMutableRawBufferPointer,
                                            into output: UnsafeMutableRawBufferPointer) -> Bool {
        let sealed = UnsafeMutableRawBufferPointer(rebasing: sealedScratch[0..<cipherSize])
        file.readsAccess(false)
        guard (try? preadAll(file.fd, sealed, at: BlockLayout.backingOffset(ofBlock: block))) == cipherSize else {
            return false
        }
        let target = UnsafeMutableRawBufferPointer(rebasing: output[0..<blockSize])
        return BlockSealer(cipher: file.header.cipher, key: key.pointer).withSession {
            open($0, AdditionalData(file.fileID), block: block, last: false, sealed: UnsafeRawBufferPointer(sealed), into: target)
        }
    }

    /// Whether `file` is cut short on a block boundary: its size a whole number of
    /// blocks, and its last stored block opens only as an ordinary one (FileEnd), as a
    /// read of that block then fails. `scratch` holds a block and its seal; the block's
    /// plaintext is wiped from it.
    public static func isCutOnBlockBoundary(_ file: SealedFile, key: SecureBuffer,
                                            scratch: UnsafeMutableRawBufferPointer) -> Bool {
        let size = file.plainSize
        guard size > 0, size % blockSize == 0, scratch.count >= blockSize + cipherSize else { return false }
        let plain = UnsafeMutableRawBufferPointer(rebasing: scratch[0..<blockSize])
        let sealed = UnsafeMutableRawBufferPointer(rebasing: scratch[blockSize..<blockSize + cipherSize])
        defer { plain.initializeMemory(as: UInt8.self, repeating: 0) }
        return opensAsOrdinaryBlock(file, key: key, block: size / blockSize - 1, sealedScratch: sealed, into: plain)
    }

    // MARK: Write

    /// Writes `data` at plaintext `offset`; returns bytes written.
    /// Caller holds the file's lock (exclusive) and has checked the key.
    public static func write(_ file: SealedFile, key: SecureBuffer, data: UnsafeRawBufferPointer, offset: Int,
                      pool: BufferPool) throws(Errno) -> Int {
        guard data.count > 0 else { return 0 }
        guard offset >= 0 else { throw Errno.invalid }
        // As write(2) at a file-size limit: nothing at or past the largest file, and
        // of a write that reaches past it, what fits.
        guard offset < BlockLayout.maxPlainSize else { throw Errno.fileTooLarge }
        let data = UnsafeRawBufferPointer(rebasing: data[0..<min(data.count, BlockLayout.maxPlainSize - offset)])
        let size = file.plainSize
        // A write that starts past the last block leaves that block behind as an
        // ordinary one; else the write itself seals it again.
        if offset + data.count > size && offset / blockSize > BlockLayout.lastBlock(plainSize: size) {
            return try growPast(file, key: key, pool: pool) { () throws(Errno) in
                try writeBlocks(file, key: key, data: data, offset: offset, pool: pool)
            }
        }
        return try writeBlocks(file, key: key, data: data, offset: offset, pool: pool)
    }

    /// Grows a file past its last block L with `body`, which writes the new last block:
    /// first L is padded to a full block if short (still sealed as the last: a kill here
    /// leaves a valid file, zero-padded), then `body` runs, then L is sealed again as an
    /// ordinary block. Returns what `body` returns. When `body` fails (a full disk) L
    /// gets its length back: the file is as it was.
    public static func growPast<R>(_ file: SealedFile, key: SecureBuffer, pool: BufferPool,
                                   _ body: () throws(Errno) -> R) throws(Errno) -> R {
        let size = file.plainSize
        let last = BlockLayout.lastBlock(plainSize: size)
        let padded = size == 0 || size % blockSize != 0
        if padded {
            // The padding may need a disk block: reserved first, so that a full disk
            // fails it before L is written rather than inside L.
            try reserveBacking(file, BlockLayout.backingSize(plainSize: size)..<BlockLayout.backingOffset(ofBlock: last + 1))
            try resealBlock(file, key: key, block: last, newLength: blockSize, last: true, pool: pool)
        } else {
            // A full last block needs no padding, but must open as the last all the same:
            // a file cut short by whole blocks ends in one sealed as an ordinary block,
            // and sealing it as one again below would hide the cut (EIO, as reads say).
            try checkBlock(file, key: key, block: last, pool: pool)
        }
        let result: R
        do throws(Errno) { result = try body() } catch {
            if padded {
                // Shorter again, in the disk blocks it has: no new space needed.
                try? resealBlock(file, key: key, block: last, newLength: size - last * blockSize, last: true, pool: pool)
                _ = ftruncate(file.fd, off_t(BlockLayout.backingSize(plainSize: size)))
            }
            throw error
        }
        try resealBlock(file, key: key, block: last, newLength: blockSize, last: false, pool: pool)
        return result
    }

    /// Seals the blocks `data` covers at plaintext `offset` (the file's last block, old
    /// or new, among them when the write reaches it), `write` having held them within
    /// the largest file.
    private static func writeBlocks(_ file: SealedFile, key: SecureBuffer, data: UnsafeRawBufferPointer, offset: Int,
                            pool: BufferPool) throws(Errno) -> Int {
        let end = offset + data.count
        let oldSize = file.plainSize
        let newSize = max(oldSize, end)
        let newLast = BlockLayout.lastBlock(plainSize: newSize)
        let blocks = BlockLayout.blocks(offset: offset, count: data.count)
        // While the disk has room to spare, a write that only adds blocks after the
        // existing ones (an append, a copy, an extraction) overwrites nothing: instead
        // of reserving space first (fallocate, costly on every small write) a failed
        // write is cut off again below; any other reserves what it adds past the end.
        // Near full, every write keeps what it replaces and reserves all of its range
        // first (WriteUndo): a hole it fills needs disk blocks as the end does, and a
        // write that fails partway leaves the block it stopped in torn.
        // What the write may allocate: its own blocks, not the rest of the file after them
        // (counted against the room cached for the next 50 ms, that would make every
        // overwrite near the start of a large file look like a full disk).
        let mayTake = min(BlockLayout.backingSize(plainSize: newSize), BlockLayout.backingOffset(ofBlock: blocks.upperBound))
            - BlockLayout.backingOffset(ofBlock: blocks.lowerBound)
        let roomy = FreeSpace.hasRoom(file.fd, for: mayTake)
        let appendsOnly = blocks.lowerBound * blockSize >= oldSize
        if roomy && !appendsOnly {
            try reserveSpace(file, plainSize: newSize, from: offset / blockSize)
        }
        let ad = AdditionalData(file.fileID)
        let cipher = file.header.cipher
        return try pool.withSlot { (slot) throws(Errno) -> Int in
            let buffer = slot.buffer
            let sealer = slot.sealer(cipher, key: key)
            defer { sealer.finish() }
            // [sealed blocks of one batch … | their nonces | plaintext scratch | sealed scratch]
            let capacity = (buffer.count - blockSize - cipherSize) / (cipherSize + nonceField)
            let nonces = UnsafeMutableRawPointer(buffer.start) + capacity * cipherSize
            let scratchStart = capacity * (cipherSize + nonceField)
            let plainScratch = UnsafeMutableRawBufferPointer(rebasing: buffer[scratchStart..<scratchStart + blockSize])
            let sealedScratch = UnsafeMutableRawBufferPointer(rebasing: buffer[scratchStart + blockSize..<scratchStart + blockSize + cipherSize])
            var block = blocks.lowerBound
            while block < blocks.upperBound {
                let first = block
                let batchEnd = min(blocks.upperBound, block + capacity)
                slot.nonces.fill(nonces, count: (batchEnd - first) * nonceField)

                func sealed(_ current: Int) -> UnsafeMutableRawBufferPointer {
                    let start = (current - first) * cipherSize
                    let length = BlockLayout.plainLength(ofBlock: current, plainSize: newSize) + overhead
                    let target = UnsafeMutableRawBufferPointer(rebasing: buffer[start..<start + length])
                    UnsafeMutableRawPointer(target.start).copyMemory(from: nonces + (current - first) * nonceField, byteCount: cipher.nonceSize)
                    return target
                }
                func isWhole(_ current: Int) -> Bool {
                    current * blockSize >= offset && min(newSize, (current + 1) * blockSize) <= end
                }
                // A block the write covers whole is sealed straight from the data.
                func sealWhole(_ session: BlockSession, _ current: Int) {
                    let blockStart = current * blockSize
                    let length = BlockLayout.plainLength(ofBlock: current, plainSize: newSize)
                    let source = UnsafeRawBufferPointer(rebasing: data[(blockStart - offset)..<(blockStart - offset + length)])
                    seal(session, ad, block: current, last: current == newLast, plain: source, into: sealed(current))
                }
                // A block it covers in part is read, patched and sealed again.
                func patch(_ session: BlockSession, _ current: Int) throws(Errno) {
                    let blockStart = current * blockSize
                    let existing = BlockLayout.plainLength(ofBlock: current, plainSize: oldSize)
                    let newLength = BlockLayout.plainLength(ofBlock: current, plainSize: newSize)
                    let from = max(offset, blockStart) - blockStart
                    let to = min(end, blockStart + blockSize) - blockStart
                    let plain = UnsafeMutableRawBufferPointer(rebasing: plainScratch[0..<newLength])
                    plain.initializeMemory(as: UInt8.self, repeating: 0)
                    if existing > 0 {
                        try readBlock(file, key: key, block: current, size: oldSize,
                                      sealedScratch: sealedScratch, into: plainScratch, session: session)
                    }
                    UnsafeMutableRawBufferPointer(rebasing: plain[from..<to])
                        .copyMemory(from: UnsafeRawBufferPointer(rebasing: data[(blockStart + from - offset)..<(blockStart + to - offset)]))
                    seal(session, ad, block: current, last: current == newLast, plain: UnsafeRawBufferPointer(plain),
                         into: sealed(current))
                }
                var lower = first, upper = batchEnd
                try sealer.withSession { (session) throws(Errno) in
                    if !isWhole(lower) {
                        try patch(session, lower)
                        lower += 1
                    }
                    if upper > lower && !isWhole(upper - 1) {
                        try patch(session, upper - 1)
                        upper -= 1
                    }
                }
                _ = BlockWorkers.shared.run(lower..<upper) { part in
                    sealer.withSession { session in
                        for current in part { sealWhole(session, current) }
                        return true
                    }
                }
                let used = (batchEnd - 1 - first) * cipherSize
                    + BlockLayout.plainLength(ofBlock: batchEnd - 1, plainSize: newSize) + overhead
                try writeBatch(file, UnsafeRawBufferPointer(rebasing: buffer[0..<used]),
                               at: BlockLayout.backingOffset(ofBlock: first), guarded: !roomy, appendsOnly: appendsOnly,
                               pool: pool)
                file.plainSize = max(file.plainSize, min(end, batchEnd * blockSize))
                file.unsynced = true
                if used >= startWritebackBytes {
                    // A large write: have the disk start on it now, while the next
                    // requests are sealed, rather than all of it at the fsync or later.
                    _ = sync_file_range(file.fd, off_t(BlockLayout.backingOffset(ofBlock: first)), off_t(used),
                                        SyncFileRange.write)
                }
                block = batchEnd
            }
            return data.count
        }
    }

    /// Writes one batch of sealed blocks at backing offset `at`, leaving no torn block
    /// behind when the disk is full: `guarded` (near full), through a WriteUndo, which
    /// puts the range back as it was; else a write that only appended is cut off again.
    private static func writeBatch(_ file: SealedFile, _ bytes: UnsafeRawBufferPointer, at: Int, guarded: Bool,
                                   appendsOnly: Bool, pool: BufferPool) throws(Errno) {
        let oldBackingSize = BlockLayout.backingSize(plainSize: file.plainSize)
        guard guarded else {
            do throws(Errno) { try pwriteAll(file.fd, bytes, at: at, partSize: backingWritePart) } catch {
                if appendsOnly { _ = ftruncate(file.fd, off_t(oldBackingSize)) }
                throw error
            }
            return
        }
        try pool.withBuffer { (saved) throws(Errno) in
            let undo = try WriteUndo(file, range: at..<at + bytes.count, oldBackingSize: oldBackingSize, buffer: saved)
            do throws(Errno) { try pwriteAll(file.fd, bytes, at: at, partSize: backingWritePart) } catch {
                undo.restore()
                throw error
            }
        }
    }

    /// Writes of at least this many backing bytes start their own writeback.
    public static let startWritebackBytes = 512 * 1024

    /// Reserves backing space before growing, so a full disk fails the write before
    /// anything is overwritten. Only from block `from` on: a gap a write leaves before
    /// it stays a hole, as in a sparse file on a local disk.
    public static func reserveSpace(_ file: SealedFile, plainSize: Int, from block: Int = 0) throws(Errno) {
        let current = max(BlockLayout.backingSize(plainSize: file.plainSize), BlockLayout.backingOffset(ofBlock: block))
        let needed = BlockLayout.backingSize(plainSize: plainSize)
        guard needed > current else { return }
        try reserveBacking(file, current..<needed)
    }

    /// Reserves backing bytes `range`, at or past the end of the backing file. A full
    /// disk (ENOSPC, EDQUOT) is thrown once what the attempt took is given back (ext4
    /// keeps what a failed fallocate allocated); where the file system cannot reserve,
    /// nothing is.
    static func reserveBacking(_ file: SealedFile, _ range: Range<Int>) throws(Errno) {
        guard !range.isEmpty else { return }
        // KEEP_SIZE: ext4 grows i_size as it allocates, so a plain fallocate that
        // fails halfway would leave a size that no longer matches the blocks.
        if fallocate(file.fd, FallocateMode.keepSize, off_t(range.lowerBound), off_t(range.count)) != 0 {
            let failure = Errno.current
            guard failure == .noSpace || failure == .quotaExceeded else { return }
            // A truncate to the size it has frees what lies past it.
            _ = ftruncate(file.fd, off_t(BlockLayout.backingSize(plainSize: file.plainSize)))
            throw failure
        }
    }

    /// Reads block `block` where the file's size places it (its last block or not) and
    /// forgets the plaintext; EIO when it does not open there.
    static func checkBlock(_ file: SealedFile, key: SecureBuffer, block: Int, pool: BufferPool) throws(Errno) {
        try pool.withBuffer { (buffer) throws(Errno) in
            let plain = UnsafeMutableRawBufferPointer(rebasing: buffer[0..<blockSize])
            defer { plain.initializeMemory(as: UInt8.self, repeating: 0) }
            let sealedScratch = UnsafeMutableRawBufferPointer(rebasing: buffer[blockSize..<blockSize + cipherSize])
            try readBlock(file, key: key, block: block, size: file.plainSize, sealedScratch: sealedScratch, into: plain)
        }
    }

    /// Seals block `block` again with plaintext length `newLength` (cut, or padded with
    /// zeros) and the given place (last or not); the file's size follows when it is the
    /// last block.
    public static func resealBlock(_ file: SealedFile, key: SecureBuffer, block: Int, newLength: Int, last: Bool,
                            pool: BufferPool) throws(Errno) {
        try pool.withBuffer { (buffer) throws(Errno) in
            let plain = UnsafeMutableRawBufferPointer(rebasing: buffer[0..<blockSize])
            plain.initializeMemory(as: UInt8.self, repeating: 0)
            let sealedScratch = UnsafeMutableRawBufferPointer(rebasing: buffer[blockSize..<blockSize + cipherSize])
            try readBlock(file, key: key, block: block, size: file.plainSize, sealedScratch: sealedScratch, into: plain)
            let end = blockSize + cipherSize + newLength + overhead
            let sealed = UnsafeMutableRawBufferPointer(rebasing: buffer[blockSize + cipherSize..<end])
            sealBlock(file, key: key, block: block, last: last, plain: UnsafeRawBufferPointer(rebasing: plain[0..<newLength]),
                      into: sealed)
            plain.initializeMemory(as: UInt8.self, repeating: 0)
            try pwriteAll(file.fd, UnsafeRawBufferPointer(sealed), at: BlockLayout.backingOffset(ofBlock: block))
            if last { file.plainSize = block * blockSize + newLength }
            file.unsynced = true
        }
    }

    /// Writes block `block` as the file's new last block: `length` zero bytes, sealed.
    public static func writeZeroLastBlock(_ file: SealedFile, key: SecureBuffer, block: Int, length: Int,
                                          pool: BufferPool) throws(Errno) {
        try pool.withBuffer { (buffer) throws(Errno) in
            let plain = UnsafeMutableRawBufferPointer(rebasing: buffer[0..<length])
            plain.initializeMemory(as: UInt8.self, repeating: 0)
            let sealed = UnsafeMutableRawBufferPointer(rebasing: buffer[blockSize..<blockSize + length + overhead])
            sealBlock(file, key: key, block: block, last: true, plain: UnsafeRawBufferPointer(plain), into: sealed)
            try pwriteAll(file.fd, UnsafeRawBufferPointer(sealed), at: BlockLayout.backingOffset(ofBlock: block))
            file.plainSize = block * blockSize + length
            file.unsynced = true
        }
    }

    /// Whether `sealed` is an empty file's one block: empty, sealed as the last.
    public static func openEmptyBlock(_ file: SealedFile, key: SecureBuffer, sealed: [UInt8]) -> Bool {
        BlockSealer(cipher: file.header.cipher, key: key.pointer).withSession { session in
            sealed.withUnsafeBytes {
                open(session, AdditionalData(file.fileID), block: 0, last: true, sealed: $0,
                     into: UnsafeMutableRawBufferPointer(start: nil, count: 0))
            }
        }
    }

    /// Reads and checks an empty file's one block (fsck); EIO when it does not open.
    public static func checkEmptyFile(_ file: SealedFile, key: SecureBuffer) throws(Errno) {
        var sealed = [UInt8](repeating: 0, count: overhead)
        let got = try sealed.withMutableBytes { (bytes) throws(Errno) in
            try preadAll(file.fd, bytes, at: BlockLayout.headerSize)
        }
        guard got == overhead, openEmptyBlock(file, key: key, sealed: sealed) else { throw Errno.io }
    }

    // MARK: Truncate

    /// Sets `fd`'s modification time (and so its change time) to now.
    private static func markModified(_ fd: Int32) throws(Errno) {
        let times = [timespec(tv_sec: 0, tv_nsec: TimeSpecial.omit), timespec(tv_sec: 0, tv_nsec: TimeSpecial.now)]
        try Errno.check(futimens(fd, times))
    }

    /// Sets the plaintext size. A content change: without the file key (its class is
    /// unavailable), EPERM. Whatever block ends the file afterwards is sealed as the last.
    public static func resize(_ file: SealedFile, key: SecureBuffer?, to newSize: Int, pool: BufferPool) throws(Errno) {
        guard newSize >= 0 else { throw Errno.invalid }
        guard newSize <= BlockLayout.maxPlainSize else { throw Errno.fileTooLarge }
        guard let key else { throw Errno.notPermitted }
        let size = file.plainSize
        // Nothing to cut or grow, yet a truncate marks the file modified all the same
        // (ext4 does, and `: > stamp` relies on it).
        guard newSize != size else { return try markModified(file.fd) }
        file.unsynced = true
        let oldLast = BlockLayout.lastBlock(plainSize: size)
        let newLast = BlockLayout.lastBlock(plainSize: newSize)
        let newLength = newSize - newLast * blockSize
        if newSize > size {
            // Only the new last block is written: the gap before it stays a hole.
            try reserveSpace(file, plainSize: newSize, from: newLast)
            if newLast == oldLast {
                return try resealBlock(file, key: key, block: oldLast, newLength: newLength, last: true, pool: pool)
            }
            return try growPast(file, key: key, pool: pool) { () throws(Errno) in
                try writeZeroLastBlock(file, key: key, block: newLast, length: newLength, pool: pool)
                // The new last block on disk before the old one is sealed as ordinary:
                // else a power cut could leave the file ending in that ordinary block,
                // a cut its data, synced before, would read as EIO after.
                try Errno.check(fdatasync(file.fd))
            }
        }
        // Shrinking: the new last block is sealed as the last, then the rest cut off,
        // the two steps marked in the header so a kill between them is finished at the
        // next open (InterruptedCut). A file cut to nothing gets its empty block
        // without reading the old one, which may be the damage being thrown away.
        try InterruptedCut.begin(file, to: newSize)
        TestHooks.killPoint("shrink-begun")
        do throws(Errno) {
            if newSize == 0 {
                try writeZeroLastBlock(file, key: key, block: 0, length: 0, pool: pool)
            } else {
                try resealBlock(file, key: key, block: newLast, newLength: newLength, last: true, pool: pool)
            }
        } catch {
            file.plainSize = size
            try? InterruptedCut.end(file)
            throw error
        }
        TestHooks.killPoint("shrink-sealed")
        // The mark and the new last block on disk before the cut: the file system may
        // commit the smaller size before pages written earlier, and a power cut would
        // then leave a file ending in a block that does not open and no mark to finish it.
        try Errno.check(fdatasync(file.fd))
        try Errno.check(ftruncate(file.fd, off_t(BlockLayout.backingSize(plainSize: newSize))))
        file.plainSize = newSize
        TestHooks.killPoint("shrink-cut")
        // The cut is done: a mark left standing only costs the next open a look.
        try? InterruptedCut.end(file)
    }
}
