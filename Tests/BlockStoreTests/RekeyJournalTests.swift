// A raise's undo journal read back: a record that verifies is put back where it says;
// one whose offset lies before the blocks or past what an offset can address is
// damage (anyone who can write the device directory can make the unkeyed digest
// match), read as no record, never as a chunk to write there.
import BlockStore
import DataProtection
import Foundation
import Glibc
import Testing

@Suite struct RekeyJournalTests {
    let root: String
    let journal: RekeyJournal

    init() throws {
        root = NSTemporaryDirectory() + "dpfs-rekeyjournal-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: root + "/raising", withIntermediateDirectories: true)
        journal = RekeyJournal(device: DeviceDirectory(root), fileID: [UInt8](repeating: 0xab, count: FileHeader.fileIDSize))
    }

    /// Writes a record in the journal's format, its digest computed as a writer would.
    func plant(offset: UInt64, chunk: [UInt8]) throws {
        var record = Array("DPRJ".utf8)
        record += (0..<8).map { UInt8(truncatingIfNeeded: offset >> (8 * UInt64($0))) }
        record += (0..<4).map { UInt8(truncatingIfNeeded: UInt32(chunk.count) >> (8 * UInt32($0))) }
        record += chunk
        var hash = StreamingHash(outputLength: 32)
        hash.update(record)
        record += hash.finish()
        let name = String(repeating: "ab", count: FileHeader.fileIDSize)
        try Data(record).write(to: URL(fileURLWithPath: root + "/raising/" + name))
    }

    func cleanUp() { try? FileManager.default.removeItem(atPath: root) }

    @Test func aVerifiedRecordGivesItsRange() throws {
        defer { cleanUp() }
        try plant(offset: UInt64(BlockLayout.headerSize), chunk: [1, 2, 3])
        #expect(journal.range() == BlockLayout.headerSize..<BlockLayout.headerSize + 3)
    }

    @Test(arguments: [UInt64(Int.max) - 1, UInt64(Int.max), UInt64.max, 0, UInt64(BlockLayout.headerSize) - 1])
    func aRecordOutsideTheBlocksIsNoRecord(offset: UInt64) throws {
        defer { cleanUp() }
        try plant(offset: offset, chunk: [UInt8](repeating: 7, count: 64))
        #expect(journal.range() == nil)
        let target = root + "/target"
        let fd = open(target, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        try #require(fd >= 0)
        defer { close(fd) }
        try journal.restore(into: fd)
        var info = stat()
        #expect(fstat(fd, &info) == 0 && info.st_size == 0)
    }
}
