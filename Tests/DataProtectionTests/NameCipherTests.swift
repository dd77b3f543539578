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

    func testTheLookupsCStringIsTheStoredForm() {
        // Every length either side of the long-name limit, and a name past it.
        for count in [1, 2, 3, 4, 100, 174, 175, 176, 255] {
            let name = (0..<count).map { _ in UInt8.random(in: 0x20...0x7e) }
            let sealed = cipher.seal(name, directoryID: directory)
            let lookup = name.withUnsafeBytes { cipher.sealedCString($0, directoryID: directory) }
            XCTAssertEqual(lookup.stored, Array(sealed.stored.utf8CString), "\(count) bytes")
            XCTAssertEqual(lookup.longEncoded, sealed.isLong ? sealed.encoded : nil, "\(count) bytes")
            XCTAssertEqual(lookup.place, sealed.place, "\(count) bytes")
        }
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
        XCTAssertNil(Base64URL.decode("Zm8="), "no padding")
        XCTAssertNil(Base64URL.decode("Zm 8"))
    }

    /// RFC 4648's vectors in the URL alphabet without padding, and its two URL characters.
    func testBase64URLMatchesRFC4648() {
        let vectors = ["": "", "f": "Zg", "fo": "Zm8", "foo": "Zm9v", "foob": "Zm9vYg", "fooba": "Zm9vYmE", "foobar": "Zm9vYmFy"]
        for (plain, encoded) in vectors {
            XCTAssertEqual(Base64URL.encode(Array(plain.utf8)), encoded)
            XCTAssertEqual(Base64URL.decode(encoded), Array(plain.utf8))
        }
        XCTAssertEqual(Base64URL.encode([0xfb, 0xff]), "-_8")
        XCTAssertEqual(Base64URL.decode("-_8"), [0xfb, 0xff])
    }

    /// Stored names are on disk: the same secret, directory and name must give the same
    /// stored form in every version (these were made by the first implementation).
    func testStoredFormIsStable() {
        let secret = Array(0..<32 as Range<UInt8>).withUnsafeBytes { SecureBuffer(copying: $0) }
        let fixed = NameCipher(deviceSecret: secret)
        let directoryID = Array(100..<116 as Range<UInt8>)
        for (name, stored) in Self.knownStoredForms {
            let sealed = fixed.seal(Array(name.utf8), directoryID: directoryID)
            XCTAssertEqual(sealed.stored, stored, name)
            XCTAssertEqual(fixed.open(stored, directoryID: directoryID), Array(name.utf8), name)
        }
    }

    static let knownStoredForms: [(String, String)] = [
        ("a", "T6_sfIyx7_AOMbsZPGGsNOE"),
        ("report – été.pdf", "ETvQ-vKkZNV7ncuVi_GsowvMCD4NUyxAqWvSscnhaJe2eF9U"),
        ("source-file-12.c", "1-Kw5yeHkYBOmZlc5df0dIzVh8YpocRp13DLf1tVxqg"),
        ("xy", "R2VAGgOkuSXb2sTLE7AEDV3U"),
    ]
}
