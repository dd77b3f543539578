// A save puts the generation and the MAC into a keybag's text encoded once: what it
// writes must be, byte for byte, what encoding the whole keybag writes (dpfs(5)), and
// its MAC must verify as a mount verifies it.
@testable import DataProtection
import XCTest

final class KeybagTextTests: XCTestCase {
    private static func keybag(generation: Int) throws -> KeybagFile {
        var file = try Keybag.create(passcode: nil, deviceSecret: .random(count: 32), defaultProtection: .untilFirstAuth,
                                     eraseAfter: 10, kdf: TestDevice.fastKDF, secretStore: "file:/nowhere")
        file.deviceUUID = "6c1f8f52-4f43-4e4b-9a4e-0d6e3c1f2a10"
        file.generation = generation
        return file
    }

    private static func fullyGrown(_ file: KeybagFile) -> KeybagFile {
        var file = file
        file.directoryClasses = Dictionary(uniqueKeysWithValues: (0..<300).map {
            (String(format: "%032x", $0 * 7919), $0 % 2 == 0 ? ProtectionClass.complete : .untilFirstAuth)
        })
        file.passcodeRemovals = 2
        file.erasures = 1
        file.tpmSealedSecret = TPMSealedBlobs(publicArea: Bytes(Array(0..<200)), privateArea: Bytes(Array(50..<250)))
        file.tpmPasscodeGate = TPMSealedBlobs(publicArea: Bytes([0xff, 0xfe, 0x3f]), privateArea: Bytes([1]))
        file.policy.lastFailureFingerprint = Bytes([UInt8](repeating: 0xfb, count: 16))
        file.policy.retryAfter = 1_764_500_000.125
        return file
    }

    func testTheTextIsWhatEncodingTheKeybagWrites() throws {
        for grown in [false, true] {
            for (from, to) in [(0, 1), (9, 10), (99, 100), (10, 9), (41, 12345678)] {
                let base = try Self.keybag(generation: from)
                let file = grown ? Self.fullyGrown(base) : base
                var text = try XCTUnwrap(try KeybagText(file), "the encoder's text has the expected shape")
                text.generation = to
                var unsigned = file
                unsigned.generation = to
                unsigned.mac = nil
                XCTAssertEqual(text.unsigned, try KeybagFile.encode(unsigned), "unsigned, generation \(from) to \(to)")
                // A MAC whose base64 holds slashes, which JSONEncoder escapes.
                var signed = unsigned
                signed.mac = Bytes([UInt8](repeating: 0xff, count: 32))
                XCTAssertEqual(try text.signed(mac: try XCTUnwrap(signed.mac)), try KeybagFile.encode(signed),
                               "signed, generation \(from) to \(to)")
            }
        }
    }

    func testASavedKeybagIsItsEncodingAndVerifies() throws {
        let device = try TestDevice()
        let secret = try KeybagFile.loadDeviceSecret(of: device.directory)
        var file = Self.fullyGrown(try KeybagFile.load(from: device.directory, deviceSecret: secret))
        file.tpmSealedSecret = nil
        file.tpmPasscodeGate = nil
        let before = file.generation
        try file.save(in: device.directory, deviceSecret: secret)
        XCTAssertEqual(file.generation, before + 2, "a save writes twice")
        let written = try AtomicFile.read(device.directory.keybagPath)
        XCTAssertEqual(written, try KeybagFile.encode(file))
        let loaded = try KeybagFile.load(from: device.directory, deviceSecret: secret)
        XCTAssertEqual(loaded.directoryClasses?.count, 300)
        XCTAssertEqual(loaded.generation, file.generation)
        XCTAssertEqual(loaded.mac, file.mac)
        XCTAssertThrowsError(try KeybagFile.load(from: device.directory, deviceSecret: .random(count: 32)))
    }
}
