// BlockIO without a mount: plaintext written across block boundaries reads back, the
// file's last block is sealed as the last, holes read as zeros, a cut shrinks and a
// grow pads, and a changed ciphertext byte is refused (EIO), never read as data.
import BlockStore
import DataProtection
import Foundation
import Glibc
import SystemCalls
import Testing

final class ScratchFile {
    let path = FileManager.default.temporaryDirectory.appendingPathComponent("dpfs-blockio-\(UUID().uuidString)").path
    let key = SecureBuffer.random(count: 32)
    let pool = BufferPool(size: (1 << 20) + 4 * BlockLayout.cipherBlockSize + 64 * 1024)
    let file: SealedFile

    init(cipher: BlockCipher = .forNewFiles) throws {
        let fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        try #require(fd >= 0)
        let slot = FileHeader.KeySlot(generation: 1, protectionClass: .none, wrappedKey: [])
        let header = FileHeader(fileID: Sodium.randomBytes(16), slot: slot, cipher: cipher)
        try BlockIO.writeNewFile(fd: fd, header: header, key: key, metadataKey: SecureBuffer.random(count: 32),
                                 blockNonce: Sodium.randomBytes(BlockIO.nonceField))
        file = SealedFile(fd: fd, header: header, slot: slot, key: key, plainSize: 0)
    }

    deinit { unlink(path) }

    @discardableResult
    func write(_ bytes: [UInt8], at offset: Int) throws(Errno) -> Int {
        try bytes.withBytes { (data) throws(Errno) in try BlockIO.write(file, key: key, data: data, offset: offset, pool: pool) }
    }

    /// The whole plaintext; the errno a read failed with, thrown.
    func readAll() throws(Errno) -> [UInt8] {
        var output = [UInt8](repeating: 0xEE, count: file.plainSize)
        let n = try output.withMutableBytes { (buffer) throws(Errno) in
            try BlockIO.read(file, key: key, into: buffer, offset: 0, pool: pool)
        }
        return Array(output[0..<n])
    }

    var backingSize: Int {
        var info = stat()
        fstat(file.fd, &info)
        return Int(info.st_size)
    }
}

@Suite struct BlockIOTests {
    static func pattern(_ count: Int, seed: UInt8 = 1) -> [UInt8] { (0..<count).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ Int(seed)) } }

    /// A backing file cut short by whole blocks ends in a block sealed as an ordinary one:
    /// it reads as EIO, and a write past it must not seal it again as one and hide the cut.
    @Test func growingAFileCutByWholeBlocksFailsAndChangesNothing() throws {
        let scratch = try ScratchFile()
        let block = BlockLayout.plainBlockSize
        try scratch.write(Self.pattern(5 * block), at: 0)
        let cut = BlockLayout.backingSize(plainSize: 3 * block)
        #expect(ftruncate(scratch.file.fd, off_t(cut)) == 0)
        scratch.file.plainSize = 3 * block
        #expect(throws: Errno.io) { try scratch.readAll() }
        #expect(throws: Errno.io) { try scratch.write(Array("more".utf8), at: 3 * block) }
        #expect(throws: Errno.io) { try scratch.write(Array("far".utf8), at: 7 * block) }
        #expect(scratch.backingSize == cut)
        #expect(scratch.file.plainSize == 3 * block)
        #expect(throws: Errno.io) { try scratch.readAll() }
    }

    @Test(arguments: [BlockCipher.xchacha20Poly1305, .aes256GCM])
    func writesAcrossBlockBoundariesReadBack(cipher: BlockCipher) throws {
        guard cipher != .aes256GCM || BlockCipher.forNewFiles == .aes256GCM else { return }  // no AES-NI here
        let scratch = try ScratchFile(cipher: cipher)
        let data = Self.pattern(3 * BlockLayout.plainBlockSize + 123)
        #expect(try scratch.write(data, at: 0) == data.count)
        #expect(scratch.file.plainSize == data.count)
        // Overwrite a range that straddles blocks 0 and 1.
        let patch = Self.pattern(200, seed: 9)
        #expect(try scratch.write(patch, at: BlockLayout.plainBlockSize - 100) == patch.count)
        var expected = data
        expected.replaceSubrange(BlockLayout.plainBlockSize - 100..<BlockLayout.plainBlockSize + 100, with: patch)
        #expect(try scratch.readAll() == expected)
        #expect(scratch.backingSize == BlockLayout.backingSize(plainSize: data.count), "the backing size gives the plaintext size")
    }

    @Test func aWritePastTheEndLeavesAHoleThatReadsAsZeros() throws {
        let scratch = try ScratchFile()
        #expect(try scratch.write([1, 2, 3], at: 0) == 3)
        let far = 5 * BlockLayout.plainBlockSize + 7
        #expect(try scratch.write([9], at: far) == 1)
        let plain = try scratch.readAll()
        #expect(plain.count == far + 1)
        #expect(Array(plain[0..<3]) == [1, 2, 3])
        #expect(plain[3..<far].allSatisfy { $0 == 0 }, "the gap reads as zeros")
        #expect(plain[far] == 9)
    }

    @Test func aCutShrinksAndAGrowPadsWithZeros() throws {
        let scratch = try ScratchFile()
        let data = Self.pattern(2 * BlockLayout.plainBlockSize + 10)
        try scratch.write(data, at: 0)
        try BlockIO.resize(scratch.file, key: scratch.key, to: 5000, pool: scratch.pool)
        #expect(try scratch.readAll() == Array(data[0..<5000]))
        try BlockIO.resize(scratch.file, key: scratch.key, to: 9000, pool: scratch.pool)
        let grown = try scratch.readAll()
        #expect(Array(grown[0..<5000]) == Array(data[0..<5000]))
        #expect(grown[5000...].allSatisfy { $0 == 0 }, "what a cut removed does not come back")
        #expect(throws: Errno.notPermitted, "no key, no size change") {
            try BlockIO.resize(scratch.file, key: nil, to: 1, pool: scratch.pool)
        }
    }

    @Test func aChangedCiphertextByteIsRefusedNotRead() throws {
        let scratch = try ScratchFile()
        try scratch.write(Self.pattern(2 * BlockLayout.plainBlockSize), at: 0)
        // A byte in the middle of block 1's ciphertext.
        let offset = off_t(BlockLayout.backingOffset(ofBlock: 1) + 100)
        var byte: UInt8 = 0
        #expect(pread(scratch.file.fd, &byte, 1, offset) == 1)
        byte ^= 1
        #expect(pwrite(scratch.file.fd, &byte, 1, offset) == 1)
        #expect(throws: Errno(EIO)) { try scratch.readAll() }
    }
}
