// BlockIO without a mount: plaintext written across block boundaries reads back, the
// file's last block is sealed as the last, holes read as zeros, a cut shrinks and a
// grow pads, and a changed ciphertext byte is refused (EIO), never read as data.
import BlockStore
import DataProtection
import Foundation
import Glibc
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
        try #require(BlockIO.writeEmptyFile(fd: fd, header: header, key: key) == 0)
        file = SealedFile(fd: fd, header: header, slot: slot, key: key, plainSize: 0)
    }

    deinit { unlink(path) }

    @discardableResult
    func write(_ bytes: [UInt8], at offset: Int) -> Int {
        bytes.withUnsafeBytes { BlockIO.write(file, key: key, data: $0, offset: offset, pool: pool) }
    }

    /// The whole plaintext, or the negative errno a read answered.
    func readAll() -> Result<[UInt8], Errno> {
        var output = [UInt8](repeating: 0xEE, count: file.plainSize)
        let n = output.withUnsafeMutableBytes { BlockIO.read(file, key: key, into: $0, offset: 0, pool: pool) }
        guard n >= 0 else { return .failure(Errno(rawValue: Int32(-n))) }
        return .success(Array(output[0..<n]))
    }

    var backingSize: Int {
        var info = stat()
        fstat(file.fd, &info)
        return Int(info.st_size)
    }
}

struct Errno: Error, Equatable { let rawValue: Int32 }

@Suite struct BlockIOTests {
    static func pattern(_ count: Int, seed: UInt8 = 1) -> [UInt8] { (0..<count).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ Int(seed)) } }

    @Test(arguments: [BlockCipher.xchacha20Poly1305, .aes256GCM])
    func writesAcrossBlockBoundariesReadBack(cipher: BlockCipher) throws {
        guard cipher != .aes256GCM || BlockCipher.forNewFiles == .aes256GCM else { return }  // no AES-NI here
        let scratch = try ScratchFile(cipher: cipher)
        let data = Self.pattern(3 * BlockLayout.plainBlockSize + 123)
        #expect(scratch.write(data, at: 0) == data.count)
        #expect(scratch.file.plainSize == data.count)
        // Overwrite a range that straddles blocks 0 and 1.
        let patch = Self.pattern(200, seed: 9)
        #expect(scratch.write(patch, at: BlockLayout.plainBlockSize - 100) == patch.count)
        var expected = data
        expected.replaceSubrange(BlockLayout.plainBlockSize - 100..<BlockLayout.plainBlockSize + 100, with: patch)
        #expect(try scratch.readAll().get() == expected)
        #expect(scratch.backingSize == BlockLayout.backingSize(plainSize: data.count), "the backing size gives the plaintext size")
    }

    @Test func aWritePastTheEndLeavesAHoleThatReadsAsZeros() throws {
        let scratch = try ScratchFile()
        #expect(scratch.write([1, 2, 3], at: 0) == 3)
        let far = 5 * BlockLayout.plainBlockSize + 7
        #expect(scratch.write([9], at: far) == 1)
        let plain = try scratch.readAll().get()
        #expect(plain.count == far + 1)
        #expect(Array(plain[0..<3]) == [1, 2, 3])
        #expect(plain[3..<far].allSatisfy { $0 == 0 }, "the gap reads as zeros")
        #expect(plain[far] == 9)
    }

    @Test func aCutShrinksAndAGrowPadsWithZeros() throws {
        let scratch = try ScratchFile()
        let data = Self.pattern(2 * BlockLayout.plainBlockSize + 10)
        scratch.write(data, at: 0)
        #expect(BlockIO.resize(scratch.file, key: scratch.key, to: 5000, pool: scratch.pool) == 0)
        #expect(try scratch.readAll().get() == Array(data[0..<5000]))
        #expect(BlockIO.resize(scratch.file, key: scratch.key, to: 9000, pool: scratch.pool) == 0)
        let grown = try scratch.readAll().get()
        #expect(Array(grown[0..<5000]) == Array(data[0..<5000]))
        #expect(grown[5000...].allSatisfy { $0 == 0 }, "what a cut removed does not come back")
        #expect(BlockIO.resize(scratch.file, key: nil, to: 1, pool: scratch.pool) == -EPERM, "no key, no size change")
    }

    @Test func aChangedCiphertextByteIsRefusedNotRead() throws {
        let scratch = try ScratchFile()
        scratch.write(Self.pattern(2 * BlockLayout.plainBlockSize), at: 0)
        // A byte in the middle of block 1's ciphertext.
        let offset = off_t(BlockLayout.backingOffset(ofBlock: 1) + 100)
        var byte: UInt8 = 0
        #expect(pread(scratch.file.fd, &byte, 1, offset) == 1)
        byte ^= 1
        #expect(pwrite(scratch.file.fd, &byte, 1, offset) == 1)
        #expect(throws: Errno(rawValue: EIO)) { try scratch.readAll().get() }
    }
}
