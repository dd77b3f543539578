// What a write that meets a full disk leaves: the file as it was. The disk's refusal
// itself is played by enospc.sh on a small file system; here, what the write does
// after it: a range a write tore, across blocks on disk and holes, put back byte for
// byte with the holes punched out again (WriteUndo), and a grow past the last block
// whose new last block could not be written, undone.
@testable import BlockStore
import DataProtection
import Glibc
import SystemCalls
import Testing

@Suite struct FullDiskWriteTests {
    static let block = BlockLayout.plainBlockSize

    /// The backing file's bytes [offset, offset+count).
    static func backing(_ scratch: ScratchFile, _ range: Range<Int>) -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: range.count)
        let got = bytes.withUnsafeMutableBytes { pread(scratch.file.fd, $0.baseAddress, range.count, off_t(range.lowerBound)) }
        return Array(bytes[0..<max(0, got)])
    }

    /// Whether every backing page wholly inside `range` is a hole.
    static func isHole(_ scratch: ScratchFile, _ range: Range<Int>) -> Bool {
        var page = (range.lowerBound + 4095) & ~4095
        while page + 4096 <= range.upperBound {
            guard lseek(scratch.file.fd, off_t(page), SeekWhence.hole) == off_t(page) else { return false }
            page += 4096
        }
        return true
    }

    static let holes = BlockLayout.backingOffset(ofBlock: 4)..<BlockLayout.backingOffset(ofBlock: 8)

    /// Blocks 0-3 and 8-11 written, 4-7 holes.
    static func sparseFile() throws -> ScratchFile {
        let scratch = try ScratchFile()
        try scratch.write(BlockIOTests.pattern(12 * block), at: 0)
        try BlockIO.zeroRange(scratch.file, key: scratch.key, offset: 4 * block, length: 4 * block, extend: false,
                              pool: scratch.pool)
        #expect(isHole(scratch, holes), "the file system punches holes")
        return scratch
    }

    @Test func aWriteTornAcrossBlocksAndHolesIsPutBack() throws {
        let scratch = try Self.sparseFile()
        let plain = try scratch.readAll()
        let size = scratch.backingSize
        let range = BlockLayout.backingOffset(ofBlock: 2)..<BlockLayout.backingOffset(ofBlock: 10)
        let before = Self.backing(scratch, 0..<size)
        let saved = UnsafeMutableRawBufferPointer.allocate(byteCount: range.count, alignment: 16)
        defer { saved.deallocate() }
        let undo = try WriteUndo(scratch.file, range: range, oldBackingSize: size, buffer: saved)
        // A write that stopped inside block 6: blocks 2-5 replaced, 6 torn, 7-9 as before.
        let torn = [UInt8](repeating: 0xA5, count: BlockLayout.backingOffset(ofBlock: 6) + 100 - range.lowerBound)
        try torn.withBytes { (bytes) throws(Errno) in try pwriteAll(scratch.file.fd, bytes, at: range.lowerBound) }
        #expect(throws: Errno.io) { try scratch.readAll() }
        undo.restore()
        #expect(Self.backing(scratch, 0..<size) == before, "every byte as it was")
        #expect(scratch.backingSize == size)
        #expect(try scratch.readAll() == plain)
        #expect(Self.isHole(scratch, Self.holes), "the holes punched out again")
    }

    @Test func aWritePastTheEndIsCutBack() throws {
        let scratch = try Self.sparseFile()
        let plain = try scratch.readAll()
        let size = scratch.backingSize
        // Blocks 10-15: two the file has, four past its end.
        let range = BlockLayout.backingOffset(ofBlock: 10)..<BlockLayout.backingOffset(ofBlock: 16)
        let saved = UnsafeMutableRawBufferPointer.allocate(byteCount: range.count, alignment: 16)
        defer { saved.deallocate() }
        let undo = try WriteUndo(scratch.file, range: range, oldBackingSize: size, buffer: saved)
        let torn = [UInt8](repeating: 0x5A, count: range.count - 1000)
        try torn.withBytes { (bytes) throws(Errno) in try pwriteAll(scratch.file.fd, bytes, at: range.lowerBound) }
        undo.restore()
        #expect(scratch.backingSize == size)
        #expect(try scratch.readAll() == plain)
    }

    /// A grow past a short last block pads it first; when the new last block cannot be
    /// written, the old one must get its length back, or the file grows by the padding.
    @Test func aGrowPastTheEndThatFailsLeavesTheLastBlockAsItWas() throws {
        let scratch = try ScratchFile()
        let data = BlockIOTests.pattern(Self.block + 100)
        try scratch.write(data, at: 0)
        let size = scratch.backingSize
        #expect(throws: Errno.noSpace) {
            try BlockIO.growPast(scratch.file, key: scratch.key, pool: scratch.pool) { () throws(Errno) in
                throw Errno.noSpace
            }
        }
        #expect(scratch.file.plainSize == data.count)
        #expect(scratch.backingSize == size)
        #expect(try scratch.readAll() == data)
        #expect(try scratch.write([7], at: 3 * Self.block) == 1, "and grows as usual afterwards")
        #expect(Array(try scratch.readAll()[0..<data.count]) == data)
    }
}
