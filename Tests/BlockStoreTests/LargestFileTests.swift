// The largest file the block layout holds: every size, offset and block number derived
// from a size up to it fits an Int, one block more would not, and a write, truncate or
// zeroed range that would take a file past it (its end overflowing an Int among them)
// fails with EFBIG and changes nothing, where it used to trap.
import BlockStore
import DataProtection
import Glibc
import SystemCalls
import Testing

@Suite struct LargestFileTests {
    static let block = BlockLayout.plainBlockSize
    static let largest = BlockLayout.maxPlainSize

    @Test func theLargestFileIsWholeBlocksWithRoomForOneMore() {
        #expect(Self.largest > 1 << 62)
        #expect(Self.largest % Self.block == 0)
        // The block after the last one, as growing past it computes, still has an offset…
        let past = BlockLayout.lastBlock(plainSize: Self.largest) + 2
        let (bytes, overflow) = past.multipliedReportingOverflow(by: BlockLayout.cipherBlockSize)
        #expect(!overflow && !bytes.addingReportingOverflow(BlockLayout.headerSize).overflow)
        // …and the block after that does not: the limit is the largest there is.
        let (further, overflowFurther) = (past + 1).multipliedReportingOverflow(by: BlockLayout.cipherBlockSize)
        #expect(overflowFurther || further.addingReportingOverflow(BlockLayout.headerSize).overflow)
    }

    @Test func theLayoutArithmeticHoldsAtTheLimit() {
        let backing = BlockLayout.backingSize(plainSize: Self.largest)
        #expect(backing == BlockLayout.backingOffset(ofBlock: Self.largest / Self.block))
        #expect(BlockLayout.plainSize(backingSize: backing) == Self.largest)
        #expect(BlockLayout.isWholeBacking(backing))
        #expect(BlockLayout.lastBlock(plainSize: Self.largest) == Self.largest / Self.block - 1)
        #expect(BlockLayout.blocks(offset: Self.largest - 1, count: 1) == Self.largest / Self.block - 1..<Self.largest / Self.block)
        #expect(BlockLayout.plainLength(ofBlock: Self.largest / Self.block - 1, plainSize: Self.largest) == Self.block)
    }

    @Test func aRangeEndsWithinTheLargestFileOrNowhere() {
        #expect(BlockLayout.end(offset: 0, count: 0) == 0)
        #expect(BlockLayout.end(offset: Self.largest - 1, count: 1) == Self.largest)
        #expect(BlockLayout.end(offset: Self.largest, count: 0) == Self.largest)
        #expect(BlockLayout.end(offset: Self.largest, count: 1) == nil)
        #expect(BlockLayout.end(offset: Int.max - 1, count: 1) == nil)
        #expect(BlockLayout.end(offset: Int.max, count: Int.max) == nil)
        #expect(BlockLayout.end(offset: -1, count: 1) == nil)
        #expect(BlockLayout.end(offset: 0, count: -1) == nil)
    }

    /// The file's size, backing size and content, to compare before and after.
    static func state(_ scratch: ScratchFile) throws -> [Int] {
        [scratch.file.plainSize, scratch.backingSize] + (try scratch.readAll()).map(Int.init)
    }

    @Test(arguments: [Int.max - 1, Int.max, BlockLayout.maxPlainSize, 9_200_000_000_000_000_000])
    func aWriteAtOrPastTheLargestFileFailsAndChangesNothing(offset: Int) throws {
        let scratch = try ScratchFile()
        try scratch.write(BlockIOTests.pattern(5000), at: 0)
        let before = try Self.state(scratch)
        #expect(throws: Errno.fileTooLarge) { try scratch.write([1], at: offset) }
        #expect(try Self.state(scratch) == before)
    }

    @Test(arguments: [Int.max, Int.max - 1, BlockLayout.maxPlainSize + 1])
    func aTruncatePastTheLargestFileFailsAndChangesNothing(size: Int) throws {
        let scratch = try ScratchFile()
        try scratch.write(BlockIOTests.pattern(5000), at: 0)
        let before = try Self.state(scratch)
        #expect(throws: Errno.fileTooLarge) {
            try BlockIO.resize(scratch.file, key: scratch.key, to: size, pool: scratch.pool)
        }
        #expect(throws: Errno.invalid) { try BlockIO.resize(scratch.file, key: scratch.key, to: -1, pool: scratch.pool) }
        #expect(try Self.state(scratch) == before)
    }

    @Test(arguments: [(Int.max - 101, 50, true), (Int.max, Int.max, false), (BlockLayout.maxPlainSize, 1, true),
                      (0, Int.max, false)])
    func aZeroedRangePastTheLargestFileFailsAndChangesNothing(offset: Int, length: Int, extend: Bool) throws {
        let scratch = try ScratchFile()
        try scratch.write(BlockIOTests.pattern(5000), at: 0)
        let before = try Self.state(scratch)
        #expect(throws: Errno.fileTooLarge) {
            try BlockIO.zeroRange(scratch.file, key: scratch.key, offset: offset, length: length, extend: extend,
                                  pool: scratch.pool)
        }
        #expect(try Self.state(scratch) == before)
    }
}
