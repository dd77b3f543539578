import DataProtection
import XCTest

final class NameCipherTests: XCTestCase {
    let cipher = NameCipher(deviceSecret: SecureBuffer.random(count: 32))
    let directory = Sodium.randomBytes(16)

    func testRoundTripDeterministicPerDirectory() {
        let name = Array("report – été.pdf".utf8)
        let sealed = cipher.seal(name, directoryID: directory)
        XCTAssertFalse(sealed.isLong)
        XCTAssertEqual(cipher.seal(name, directoryID: directory).stored, sealed.stored, "lookup needs no scan")
        XCTAssertEqual(cipher.open(sealed.stored, directoryID: directory), name)
        XCTAssertNotEqual(cipher.seal(name, directoryID: Sodium.randomBytes(16)).stored, sealed.stored)
        XCTAssertFalse(sealed.stored.contains("report"))
        XCTAssertFalse(sealed.stored.contains("/"))
    }

    func testForgedMovedOrForeignNamesDoNotOpen() {
        let sealed = cipher.seal(Array("a".utf8), directoryID: directory).stored
        XCTAssertNil(cipher.open(sealed, directoryID: Sodium.randomBytes(16)), "moved to another directory")
        XCTAssertNil(NameCipher(deviceSecret: SecureBuffer.random(count: 32)).open(sealed, directoryID: directory))
        var chars = Array(sealed)
        chars[chars.count - 1] = chars[chars.count - 1] == "A" ? "B" : "A"
        XCTAssertNil(cipher.open(String(chars), directoryID: directory), "altered")
        XCTAssertNil(cipher.open("plain-name.txt", directoryID: directory), "a name planted in clear")
    }

    func testLongNames() {
        let long = [UInt8](repeating: UInt8(ascii: "x"), count: 255)
        let sealed = cipher.seal(long, directoryID: directory)
        XCTAssertTrue(sealed.isLong)
        XCTAssertLessThanOrEqual(sealed.stored.utf8.count, 255)
        XCTAssertTrue(LongName.isStandIn(sealed.stored))
        XCTAssertTrue(LongName.matches(sealed.stored, encoded: sealed.encoded))
        XCTAssertEqual(cipher.open(sealed.encoded, directoryID: directory), long)
        let longest = (1...255).last { cipher.seal([UInt8](repeating: 0x61, count: $0), directoryID: directory).isLong == false }
        XCTAssertEqual(longest, 175, "names up to 175 bytes are stored directly")
    }

    func testSymlinkTargets() {
        let target = Array("../Library/Caches/secret name".utf8)
        let stored = cipher.sealTarget(target)
        XCTAssertNotEqual(stored, cipher.sealTarget(target), "random nonce")
        XCTAssertEqual(cipher.openTarget(stored), target)
        XCTAssertNil(cipher.openTarget(String(stored.dropLast())))
    }

    func testBase64URLIsCanonical() {
        for count in 0..<40 {
            let bytes = Sodium.randomBytes(count)
            XCTAssertEqual(Base64URL.decode(Base64URL.encode(bytes)), bytes)
        }
        XCTAssertNil(Base64URL.decode("AB"), "leftover bits must be zero")
        XCTAssertNil(Base64URL.decode("A"))
        XCTAssertNil(Base64URL.decode("a+b/"))
    }
}
