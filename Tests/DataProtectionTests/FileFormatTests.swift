import DataProtection
import XCTest

final class BlockLayoutTests: XCTestCase {
    func testPlainAndBackingSizesRoundTrip() {
        for size in [0, 1, 4095, 4096, 4097, 8191, 8192, 8193, 1 << 20, (5 << 30) + 17] {
            XCTAssertEqual(BlockLayout.plainSize(backingSize: BlockLayout.backingSize(plainSize: size)), size, "size \(size)")
        }
        XCTAssertEqual(BlockLayout.backingSize(plainSize: 0), BlockLayout.headerSize + 40, "an empty file keeps an empty last block")
        XCTAssertEqual(BlockLayout.backingSize(plainSize: 4096), 512 + 4136)
        XCTAssertEqual(BlockLayout.backingSize(plainSize: 1), 512 + 41)
    }

    func testWholeBackingSizes() {
        XCTAssertFalse(BlockLayout.isWholeBacking(0), "no header")
        XCTAssertFalse(BlockLayout.isWholeBacking(512), "header without the empty last block")
        XCTAssertTrue(BlockLayout.isWholeBacking(512 + 40), "empty file")
        XCTAssertTrue(BlockLayout.isWholeBacking(512 + 4136), "one full block")
        XCTAssertTrue(BlockLayout.isWholeBacking(512 + 4136 + 41), "a full block and one byte")
        XCTAssertFalse(BlockLayout.isWholeBacking(512 + 4136 + 40), "an empty block after a full one")
        XCTAssertFalse(BlockLayout.isWholeBacking(512 + 4136 + 7), "a block cut inside its nonce")
        XCTAssertEqual(BlockLayout.lastBlock(plainSize: 0), 0)
        XCTAssertEqual(BlockLayout.lastBlock(plainSize: 4096), 0)
        XCTAssertEqual(BlockLayout.lastBlock(plainSize: 4097), 1)
    }

    func testBlockRanges() {
        XCTAssertEqual(BlockLayout.blocks(offset: 0, count: 4096), 0..<1)
        XCTAssertEqual(BlockLayout.blocks(offset: 4095, count: 2), 0..<2)
        XCTAssertEqual(BlockLayout.blocks(offset: 8192, count: 1), 2..<3)
        XCTAssertEqual(BlockLayout.plainLength(ofBlock: 1, plainSize: 5000), 904)
        XCTAssertEqual(BlockLayout.plainLength(ofBlock: 2, plainSize: 5000), 0)
    }
}

final class FileHeaderTests: XCTestCase {
    let fileID = Sodium.randomBytes(16)

    func header(generation: UInt64 = 1, _ protectionClass: ProtectionClass = .complete) -> FileHeader {
        FileHeader(fileID: fileID, slot: .init(generation: generation, protectionClass: protectionClass,
                                               wrappedKey: Sodium.randomBytes(72)))
    }

    let metadataKey = SecureBuffer.random(count: 32)

    func parse(_ bytes: [UInt8], key: SecureBuffer? = nil) throws -> FileHeader {
        try bytes.withUnsafeBytes { try FileHeader(parsing: $0, metadataKey: key ?? metadataKey) }
    }

    func testRoundTrip() throws {
        let original = header()
        XCTAssertEqual(try parse(original.serialized(metadataKey: metadataKey)), original)
    }

    /// The bytes dpfs(5) gives, computed here the long way: a header written by another
    /// build (or by an older dpfs) must still open.
    func testLayoutIsTheDocumentedOne() {
        let original = header(generation: 0x0102_0304_0506_0708, .untilFirstAuth)
        let bytes = original.serialized(metadataKey: metadataKey)
        XCTAssertEqual(bytes.count, BlockLayout.headerSize)
        XCTAssertEqual(Array(bytes[0..<8]), Array("DPFS".utf8) + [2, 0, original.cipher.rawValue, 0])
        XCTAssertEqual(Array(bytes[8..<24]), fileID)
        let slot = Array(bytes[24..<152])
        XCTAssertEqual(Array(slot[0..<8]), [8, 7, 6, 5, 4, 3, 2, 1])
        XCTAssertEqual(slot[8], ProtectionClass.untilFirstAuth.rawValue)
        XCTAssertEqual(Int(slot[9]), 72)
        XCTAssertEqual(Array(slot[10..<82]), original.slots[0]?.wrappedKey)
        XCTAssertEqual(Array(slot[82..<112]), [UInt8](repeating: 0, count: 30))
        var expected = [UInt8](repeating: 0, count: 16)
        let message = Array("dpfs.header-slot.v2".utf8) + bytes[0..<24] + [0] + slot[0..<112]
        message.withUnsafeBytes { m in expected.withUnsafeMutableBytes { Sodium.hash(m, key: metadataKey.bytes, into: $0) } }
        XCTAssertEqual(Array(slot[112..<128]), expected)
        XCTAssertEqual(Array(bytes[152...]), [UInt8](repeating: 0, count: BlockLayout.headerSize - 152), "slot 1 and the rest zero")
        XCTAssertEqual(original.serializedSlot(original.slots[0]!, index: 0, metadataKey: metadataKey), slot)
    }

    func testAnotherDevicesKeyVerifiesNothing() {
        XCTAssertThrowsError(try parse(header().serialized(metadataKey: metadataKey), key: SecureBuffer.random(count: 32)))
    }

    /// Issue 12, attack 2: every single-byte change to the first KiB of a header as a
    /// class change from untilFirstAuth to complete leaves it (the old slot zeroed; two
    /// values per byte) must leave the complete slot in force or fail.
    func testNoByteFlipChangesTheClass() throws {
        var changed = header(generation: 1, .untilFirstAuth)
        changed.slots[1] = .init(generation: 2, protectionClass: .complete, wrappedKey: Sodium.randomBytes(72))
        changed.slots[0] = nil
        var original = changed.serialized(metadataKey: metadataKey)
        original += [UInt8](repeating: 0, count: 1024 - original.count)
        var promoted = 0
        for offset in 0..<1024 {
            for value in [original[offset] ^ 0x01, original[offset] &+ 0x80] {
                var bytes = original
                bytes[offset] = value
                guard let parsed = try? parse(bytes) else { continue }
                if parsed.current?.protectionClass != .complete { promoted += 1 }
            }
        }
        XCTAssertEqual(promoted, 0)
    }

    func testForgedClassByteIsRefused() throws {
        var bytes = header(generation: 1, .complete).serialized(metadataKey: metadataKey)
        bytes[FileHeader.slotOffset(0) + 8] = ProtectionClass.none.rawValue
        XCTAssertThrowsError(try parse(bytes), "the slot no longer verifies: no valid slot")
    }

    func testOlderVersionIsRefused() {
        var bytes = header().serialized(metadataKey: metadataKey)
        bytes[4] = 1
        XCTAssertThrowsError(try parse(bytes)) { error in
            XCTAssertEqual(error as? FileHeader.ParseError, .unsupportedVersion(1))
        }
    }

    func testNewerSlotWinsAndTornSlotFallsBack() throws {
        var updated = header()
        let newer = FileHeader.KeySlot(generation: 2, protectionClass: .none, wrappedKey: Sodium.randomBytes(72))
        XCTAssertEqual(updated.spareSlotIndex, 1)
        updated.slots[1] = newer
        var bytes = updated.serialized(metadataKey: metadataKey)
        XCTAssertEqual(updated.staleSlotIndex, 0, "the older slot is to be zeroed")
        XCTAssertEqual(try parse(bytes).current?.protectionClass, ProtectionClass.none)
        // Tear the newer slot: the older one stands.
        bytes[FileHeader.slotOffset(1) + 20] ^= 0xff
        XCTAssertEqual(try parse(bytes).current?.protectionClass, .complete)
        XCTAssertEqual(try parse(bytes).current?.generation, 1)
    }

    /// A raise's slot says its key replaces the other's, under its MAC: while both slots
    /// stand the header is rekeying (the old slot must not be zeroed at open), and the
    /// flag cannot be set or cleared by editing the byte.
    func testARaisesSlotIsMarkedUnderItsMAC() throws {
        var raised = header(generation: 1, .none)
        raised.slots[1] = FileHeader.KeySlot(generation: 2, protectionClass: .complete,
                                             wrappedKey: Sodium.randomBytes(72), replacesKey: true)
        var bytes = raised.serialized(metadataKey: metadataKey)
        let parsed = try parse(bytes)
        XCTAssertEqual(parsed, raised)
        XCTAssertTrue(parsed.isRekeying)
        XCTAssertEqual(parsed.current?.protectionClass, .complete)
        XCTAssertEqual(bytes[FileHeader.slotOffset(1) + 8], ProtectionClass.complete.rawValue | 0x80)
        var plain = raised
        plain.slots[1]?.replacesKey = false
        XCTAssertFalse(plain.isRekeying, "a plain class change cut short is not a raise's")
        bytes[FileHeader.slotOffset(1) + 8] &= 0x7f
        XCTAssertEqual(try parse(bytes).current?.generation, 1, "a cleared flag empties the slot")
        raised.slots[0] = nil
        XCTAssertFalse(raised.isRekeying, "one slot left: the raise is finished")
    }

    /// The cut mark lies outside what the slots' MACs cover: setting and clearing it
    /// (a shrinking truncate, InterruptedCut) needs no key and keeps the header valid.
    func testCutMarkRoundTripsOutsideTheMACs() throws {
        var bytes = header(generation: 1, .complete).serialized(metadataKey: metadataKey)
        XCTAssertNil(try parse(bytes).pendingCut)
        for size in [0, 5000, 1 << 40] {
            bytes.replaceSubrange(FileHeader.cutMarkOffset..<FileHeader.cutMarkOffset + 8, with: FileHeader.cutMark(size))
            XCTAssertEqual(try parse(bytes).pendingCut, size)
            XCTAssertEqual(try parse(bytes).current?.protectionClass, .complete)
        }
        bytes.replaceSubrange(FileHeader.cutMarkOffset..<FileHeader.cutMarkOffset + 8, with: FileHeader.cutMark(nil))
        XCTAssertNil(try parse(bytes).pendingCut)
    }

    /// The mark is outside the MACs: one past the largest file is no cut, so that no
    /// block number or backing offset is taken from it that an Int cannot hold.
    func testACutMarkPastTheLargestFileIsNoCut() throws {
        var bytes = header(generation: 1, .complete).serialized(metadataKey: metadataKey)
        bytes.replaceSubrange(FileHeader.cutMarkOffset..<FileHeader.cutMarkOffset + 8,
                              with: FileHeader.cutMark(BlockLayout.maxPlainSize))
        XCTAssertEqual(try parse(bytes).pendingCut, BlockLayout.maxPlainSize)
        for size in [BlockLayout.maxPlainSize + 1, Int.max - 1] {
            bytes.replaceSubrange(FileHeader.cutMarkOffset..<FileHeader.cutMarkOffset + 8, with: FileHeader.cutMark(size))
            XCTAssertNil(try parse(bytes).pendingCut)
        }
    }

    func testDamageIsRefused() {
        var bytes = header().serialized(metadataKey: metadataKey)
        bytes[0] = UInt8(ascii: "X")
        XCTAssertThrowsError(try parse(bytes))
        var both = header().serialized(metadataKey: metadataKey)
        both[FileHeader.slotOffset(0) + 3] ^= 1
        XCTAssertThrowsError(try parse(both), "no valid slot")
        XCTAssertThrowsError(try parse(Array(header().serialized(metadataKey: metadataKey)[0..<100])))
    }
}

final class DirectoryClassRecordTests: XCTestCase {
    let key = SecureBuffer.random(count: 32)

    func testRoundTripAndForgery() {
        let id = DirectoryClassRecord.newDirectoryID()
        let record = DirectoryClassRecord.encode(.complete, directoryID: id, metadataKey: key)
        let decoded = DirectoryClassRecord.decode(record, metadataKey: key)
        XCTAssertEqual(decoded?.protectionClass, .complete)
        XCTAssertEqual(decoded?.directoryID, id)
        var lowered = record
        lowered[0] = ProtectionClass.none.rawValue
        XCTAssertNil(DirectoryClassRecord.decode(lowered, metadataKey: key), "class byte edited")
        XCTAssertNil(DirectoryClassRecord.decode(Array("none".utf8), metadataKey: key), "a class name in clear")
        XCTAssertNil(DirectoryClassRecord.decode(record, metadataKey: SecureBuffer.random(count: 32)), "another device")
        XCTAssertNil(DirectoryClassRecord.decode(record.dropLast(), metadataKey: key), "cut short")
    }
}

final class ProtectionClassTests: XCTestCase {
    func testAliases() {
        XCTAssertEqual(ProtectionClass(name: "NSFileProtectionComplete"), .complete)
        XCTAssertEqual(ProtectionClass(name: "B"), .completeUnlessOpen)
        XCTAssertEqual(ProtectionClass(name: "completeUntilFirstUserAuthentication"), .untilFirstAuth)
        XCTAssertEqual(ProtectionClass(name: "NSFileProtectionCompleteUntilFirstUserAuthentication"), .untilFirstAuth)
        XCTAssertEqual(ProtectionClass(name: "D"), ProtectionClass.none)
        XCTAssertNil(ProtectionClass(name: "bogus"))
        XCTAssertNil(ProtectionClass(name: "Complete"))
    }
}

final class AEADTests: XCTestCase {
    func testTamperingIsDetected() {
        let key = SecureBuffer.random(count: 32)
        let secret = SecureBuffer.random(count: 32)
        var sealed = AEAD.seal(secret, additionalData: [1, 2, 3], key: key)
        XCTAssertNotNil(AEAD.open(sealed, additionalData: [1, 2, 3], key: key))
        XCTAssertNil(AEAD.open(sealed, additionalData: [1, 2, 4], key: key), "other associated data")
        XCTAssertNil(AEAD.open(sealed, additionalData: [1, 2, 3], key: SecureBuffer.random(count: 32)), "other key")
        sealed[30] ^= 1
        XCTAssertNil(AEAD.open(sealed, additionalData: [1, 2, 3], key: key), "flipped bit")
    }

    func testNoncesAreFresh() {
        let key = SecureBuffer.random(count: 32)
        let secret = SecureBuffer.random(count: 32)
        XCTAssertNotEqual(AEAD.seal(secret, additionalData: [], key: key), AEAD.seal(secret, additionalData: [], key: key))
    }

    func testWipeZeroes() {
        let secret = SecureBuffer.random(count: 32)
        secret.wipe()
        XCTAssertTrue(secret.bytes.allSatisfy { $0 == 0 })
    }
}
