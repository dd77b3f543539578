import DataProtection
import XCTest

final class BlockLayoutTests: XCTestCase {
    func testPlainAndBackingSizesRoundTrip() {
        for size in [0, 1, 4095, 4096, 4097, 8191, 8192, 8193, 1 << 20, (5 << 30) + 17] {
            XCTAssertEqual(BlockLayout.plainSize(backingSize: BlockLayout.backingSize(plainSize: size)), size, "size \(size)")
        }
        XCTAssertEqual(BlockLayout.backingSize(plainSize: 0), BlockLayout.headerSize)
        XCTAssertEqual(BlockLayout.backingSize(plainSize: 4096), 512 + 4136)
        XCTAssertEqual(BlockLayout.backingSize(plainSize: 1), 512 + 41)
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

    func parse(_ bytes: [UInt8]) throws -> FileHeader { try bytes.withUnsafeBytes { try FileHeader(parsing: $0) } }

    func testRoundTrip() throws {
        let original = header()
        XCTAssertEqual(try parse(original.serialized()), original)
    }

    func testNewerSlotWinsAndTornSlotFallsBack() throws {
        var updated = header()
        let newer = FileHeader.KeySlot(generation: 2, protectionClass: .none, wrappedKey: Sodium.randomBytes(72))
        XCTAssertEqual(updated.spareSlotIndex, 1)
        updated.slots[1] = newer
        var bytes = updated.serialized()
        XCTAssertEqual(try parse(bytes).current?.protectionClass, ProtectionClass.none)
        // Tear the newer slot: the older one stands.
        bytes[FileHeader.slotOffset(1) + 20] ^= 0xff
        XCTAssertEqual(try parse(bytes).current?.protectionClass, .complete)
        XCTAssertEqual(try parse(bytes).current?.generation, 1)
    }

    func testDamageIsRefused() {
        var bytes = header().serialized()
        bytes[0] = UInt8(ascii: "X")
        XCTAssertThrowsError(try parse(bytes))
        var both = header().serialized()
        both[FileHeader.slotOffset(0) + 3] ^= 1
        XCTAssertThrowsError(try parse(both), "no valid slot")
        XCTAssertThrowsError(try parse(Array(header().serialized()[0..<100])))
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
