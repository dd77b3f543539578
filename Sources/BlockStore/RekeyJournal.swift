// The undo journal of a raise's move to a new key (Rekey): before a chunk of blocks is
// rewritten in place, its bytes as they were go to a file of its own, synced. A kill
// or a power cut can tear a block being rewritten, leaving it under neither key; the
// journal puts the chunk back as it was (every block whole, under one key or the
// other), and the move goes on from there. One file per raise in the device
// directory's `raising/`, named by the file's ID (dpfs(5)):
//   "DPRJ" | offset u64 | length u32 | bytes | BLAKE2b-256 of all before it
// A record that does not verify (the kill came while it was written) is ignored: the
// chunk was not touched yet. The file is made, with room for the largest chunk, before
// the raise changes anything (reserve), and kept from chunk to chunk (its record
// voided once the chunk is written), so that a full disk refuses the raise at its
// start rather than stopping it halfway, and no chunk waits for space another took.
import CLinux
import DataProtection
import Glibc
import SystemCalls

public struct RekeyJournal {
    let directory: String
    let path: String
    static let magic: [UInt8] = Array("DPRJ".utf8)
    static let headerSize = 16
    static let digestSize = 32

    /// The journal of the file `fileID` in the device directory `device`.
    public init(device: DeviceDirectory, fileID: [UInt8]) {
        let digits = Array("0123456789abcdef".utf8)
        let name = String(decoding: fileID.flatMap { [digits[Int($0 >> 4)], digits[Int($0 & 15)]] }, as: UTF8.self)
        directory = device.root + "/raising"
        path = directory + "/" + name
    }

    /// Whether a journal is left (a move a kill cut short).
    public var exists: Bool { access(path, F_OK) == 0 }

    /// The byte range of the backing file a verified journal holds, if any.
    public func range() -> Range<Int>? {
        read().map { $0.offset..<$0.offset + $0.bytes.count }
    }

    /// Makes the journal of a new raise of a file of `backingSize` bytes: empty, with
    /// its disk blocks for the largest chunk taken now (fallocate). A full disk (ENOSPC,
    /// EDQUOT) is thrown, and the journal removed again: the raise must not begin. A
    /// journal left from before is discarded (no raise of the file is under way).
    public func reserve(forBackingSize backingSize: Int) throws(Errno) {
        let chunk = min(Rekey.chunkBlocks * BlockLayout.cipherBlockSize, max(0, backingSize - BlockLayout.headerSize))
        let fd = try open(truncating: true)
        defer { close(fd) }
        if fallocate(fd, 0, 0, off_t(Self.headerSize + chunk + Self.digestSize)) != 0 {
            let failure = Errno.current
            guard failure == .noSpace || failure == .quotaExceeded else { return }
            try? remove()
            throw failure
        }
    }

    /// Puts the journaled chunk back into `fd` and syncs it, then voids the journal.
    /// A journal that does not verify is voided only.
    public func restore(into fd: Int32) throws(Errno) {
        guard exists else { return }
        if let record = read() {
            try record.bytes.withBytes { (bytes) throws(Errno) in try pwriteAll(fd, bytes, at: record.offset) }
            try Errno.check(fdatasync(fd))
        }
        try void()
    }

    /// Records `bytes`, read from `offset` of the backing file, and syncs: then the
    /// chunk may be rewritten. A record the disk has no room for is removed again.
    func record(_ bytes: UnsafeRawBufferPointer, at offset: Int) throws(Errno) {
        let fd = try open(truncating: false)
        defer { close(fd) }
        do throws(Errno) { try write(bytes, at: offset, into: fd) } catch {
            // Written before its chunk was touched: the chunk needs none of it.
            try? remove()
            throw error
        }
    }

    /// Opens the journal for writing, made if it is not there, and emptied if `truncating`.
    private func open(truncating: Bool) throws(Errno) -> Int32 {
        if mkdir(directory, 0o700) != 0 && errno != EEXIST { throw Errno.current }
        let created = access(path, F_OK) != 0
        let fd = try Errno.check(Glibc.open(path, O_WRONLY | O_CREAT | O_CLOEXEC | (truncating ? O_TRUNC : 0), 0o600))
        // A new journal's name must outlast a power cut as its bytes do.
        if created {
            let parent = Glibc.open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
            if parent >= 0 { fsync(parent); close(parent) }
        }
        return fd
    }

    private func write(_ bytes: UnsafeRawBufferPointer, at offset: Int, into fd: Int32) throws(Errno) {
        var head = Self.magic
        head += (0..<8).map { UInt8(truncatingIfNeeded: UInt64(offset) >> (8 * UInt64($0))) }
        head += (0..<4).map { UInt8(truncatingIfNeeded: UInt32(bytes.count) >> (8 * UInt32($0))) }
        var hash = StreamingHash(outputLength: Self.digestSize)
        hash.update(head)
        hash.update(bytes)
        let digest = hash.finish()
        for (part, at) in [(head, 0), (digest, Self.headerSize + bytes.count)] {
            try part.withBytes { (buffer) throws(Errno) in try pwriteAll(fd, buffer, at: at) }
        }
        try pwriteAll(fd, bytes, at: Self.headerSize)
        try Errno.check(ftruncate(fd, off_t(Self.headerSize + bytes.count + Self.digestSize)))
        try Errno.check(fdatasync(fd))
    }

    /// Voids the record (its chunk is written, or back), keeping the file and its disk
    /// blocks for the next chunk's. Unsynced, as the removal it stands for was: a void
    /// a power cut undoes puts a chunk back that both slots still open.
    func void() throws(Errno) {
        let fd = Glibc.open(path, O_WRONLY | O_CLOEXEC)
        if fd < 0 {
            guard errno == ENOENT else { throw Errno.current }
            return
        }
        defer { close(fd) }
        let none = [UInt8](repeating: 0, count: Self.magic.count)
        try none.withBytes { (bytes) throws(Errno) in try pwriteAll(fd, bytes, at: 0) }
    }

    /// Removes the journal (the move is done).
    public func remove() throws(Errno) {
        guard unlink(path) == 0 || errno == ENOENT else { throw Errno.current }
    }

    private func read() -> (offset: Int, bytes: [UInt8])? {
        let fd = Glibc.open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0, Int(info.st_size) >= Self.headerSize + Self.digestSize,
              Int(info.st_size) <= Self.headerSize + Rekey.chunkBlocks * BlockLayout.cipherBlockSize + Self.digestSize
        else { return nil }
        var all = [UInt8](repeating: 0, count: Int(info.st_size))
        let got = try? all.withMutableBytes { (buffer) throws(Errno) in try preadAll(fd, buffer, at: 0) }
        guard got == all.count, Array(all[0..<4]) == Self.magic else { return nil }
        let offset = (0..<8).reduce(UInt64(0)) { $0 | UInt64(all[4 + $1]) << (8 * UInt64($1)) }
        let length = (0..<4).reduce(0) { $0 | Int(all[12 + $1]) << (8 * $1) }
        guard Self.headerSize + length + Self.digestSize == all.count else { return nil }
        // The digest is unkeyed, so anyone who can write the device directory can make a
        // record verify: one whose chunk starts before the blocks or ends past what an
        // offset can address is damage, not a chunk to put back.
        guard offset >= UInt64(BlockLayout.headerSize), offset <= UInt64(Int.max - length) else { return nil }
        var hash = StreamingHash(outputLength: Self.digestSize)
        all.withUnsafeBytes { hash.update(UnsafeRawBufferPointer(rebasing: $0[0..<Self.headerSize + length])) }
        guard hash.finish() == Array(all[(Self.headerSize + length)...]) else { return nil }
        return (Int(offset), Array(all[Self.headerSize..<Self.headerSize + length]))
    }
}
