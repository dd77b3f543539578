// The block ciphers (header byte 6): each opens what it sealed, a file of either
// cipher keeps opening, and any change to a sealed block (the AES nonce field's
// unused half included) is refused.
import DataProtection
import XCTest

final class BlockCipherTests: XCTestCase {
    let key = SecureBuffer.random(count: 32)
    let ad: [UInt8] = Array(0..<24)
    let plain = Sodium.randomBytes(4096)

    var ciphers: [BlockCipher] { BlockCipher.allCases.filter(\.isUsable) }

    /// Seals `plain` with a fresh nonce.
    func seal(_ cipher: BlockCipher) -> [UInt8] {
        var sealed = [UInt8](repeating: 0, count: plain.count + BlockCipher.overhead)
        sealed.withUnsafeMutableBytes { out in
            Sodium.fillRandom(UnsafeMutableRawBufferPointer(rebasing: out[0..<cipher.nonceSize]))
            let sealer = BlockSealer(cipher: cipher, key: key.pointer)
            let body: (BlockSession) -> Void = { session in
                self.plain.withUnsafeBytes { p in self.ad.withUnsafeBytes { a in
                    session.seal(p, additionalData: a.baseAddress!, additionalDataCount: a.count, into: out)
                } }
            }
            sealer.withSession(body)
        }
        return sealed
    }

    func open(_ cipher: BlockCipher, _ sealed: [UInt8]) -> [UInt8]? {
        var output = [UInt8](repeating: 0xee, count: sealed.count - BlockCipher.overhead)
        let ok = sealed.withUnsafeBytes { s in ad.withUnsafeBytes { a in output.withUnsafeMutableBytes { o in
            let sealer = BlockSealer(cipher: cipher, key: key.pointer)
            let body: (BlockSession) -> Bool = { $0.open(s, additionalData: a.baseAddress!, additionalDataCount: a.count, into: o) }
            return sealer.withSession(body)
        } } }
        if !ok {
            XCTAssertTrue(output.allSatisfy { $0 == 0 } || output.allSatisfy { $0 == 0xee },
                          "a refused block leaves no unchecked plaintext")
        }
        return ok ? output : nil
    }

    func testEachCipherOpensWhatItSealed() {
        for cipher in ciphers {
            XCTAssertEqual(open(cipher, seal(cipher)), plain, cipher.name)
        }
    }

    func testAnyChangeIsRefused() {
        for cipher in ciphers {
            let sealed = seal(cipher)
            // Every part of the block: nonce, the AES nonce field's unused half, body, tag.
            for index in [0, 11, 12, 23, 24, 2000, sealed.count - 1] {
                var damaged = sealed
                damaged[index] ^= 0x01
                XCTAssertNil(open(cipher, damaged), "\(cipher.name): byte \(index) changed")
                XCTAssertNil(open(cipher, damaged), "\(cipher.name): byte \(index) changed")
            }
            let other = cipher == .aes256GCM ? BlockCipher.xchacha20Poly1305 : .aes256GCM
            if other.isUsable { XCTAssertNil(open(other, sealed), "opened with the other cipher") }
        }
    }

    func testAESLeavesTheNonceFieldTailZero() {
        guard BlockCipher.aes256GCMAvailable else { return }
        let sealed = seal(.aes256GCM)
        XCTAssertEqual(Array(sealed[12..<24]), [UInt8](repeating: 0, count: 12))
    }

    func testHeaderKeepsItsCipher() throws {
        let slot = FileHeader.KeySlot(generation: 1, protectionClass: .complete, wrappedKey: Sodium.randomBytes(72))
        let key = SecureBuffer.random(count: 32)
        for cipher in ciphers {
            let header = FileHeader(fileID: Sodium.randomBytes(16), slot: slot, cipher: cipher)
            let bytes = header.serialized(metadataKey: key)
            XCTAssertEqual(bytes[6], cipher.rawValue)
            XCTAssertEqual(try bytes.withUnsafeBytes { try FileHeader(parsing: $0, metadataKey: key) }.cipher, cipher)
        }
        var unknown = FileHeader(fileID: Sodium.randomBytes(16), slot: slot).serialized(metadataKey: key)
        unknown[6] = 9
        XCTAssertThrowsError(try unknown.withUnsafeBytes { try FileHeader(parsing: $0, metadataKey: key) })
    }

    func testNoncesDoNotRepeat() {
        let source = NonceSource()
        var seen = Set<[UInt8]>()
        var buffer = [UInt8](repeating: 0, count: 24 * 256)
        for _ in 0..<64 {
            buffer.withUnsafeMutableBytes { source.fill($0.baseAddress!, count: $0.count) }
            for index in 0..<256 { XCTAssertTrue(seen.insert(Array(buffer[index * 24..<index * 24 + 12])).inserted) }
        }
    }
}
