// A file store that is not safe is refused with what is wrong and that cause's fix:
// a store of another user's, whatever its mode, is named by its owner, not by a
// chmod it already has.
import DataProtection
import Foundation
import Glibc
import XCTest

final class SecretStoreSafetyTests: XCTestCase {
    private let device = "5B1C7A52-0D6E-4B8E-9C39-3E0A4F6D2B71"
    private var directory = ""
    private var store: SecretStoreLocation { .file(directory: directory) }

    override func setUpWithError() throws {
        let base = FileManager.default.temporaryDirectory.path
        var template = Array("\(base)/secretstore-XXXXXX".utf8CString)
        let made = try XCTUnwrap(mkdtemp(&template))
        directory = String(cString: made) + "/secrets"
        let (secret, _) = try DeviceSecretStore.create(for: device, in: store)
        secret.wipe()
    }

    override func tearDown() {
        try? FileManager.default.removeItem(atPath: (directory as NSString).deletingLastPathComponent)
    }

    private func refusal() -> String {
        do {
            let secret = try DeviceSecretStore.load(for: device, from: store)
            secret.wipe()
            return "loaded"
        } catch {
            return "\(error)"
        }
    }

    func testSafeStoreLoads() {
        XCTAssertEqual(refusal(), "loaded")
    }

    func testDirectoryOpenToOthersNamesItsModeAndTheChmod() {
        XCTAssertEqual(chmod(directory, 0o755), 0)
        let text = refusal()
        XCTAssertTrue(text.contains("\(directory) has mode 0755, open to others"), text)
        XCTAssertTrue(text.contains("(chmod 700 \(directory))"), text)
        XCTAssertFalse(text.contains("owned by"), text)
    }

    func testDirectoryOfAnotherUserNamesItsOwnerNotAChmod() throws {
        try XCTSkipUnless(geteuid() == 0, "only root can give the store to another user")
        XCTAssertEqual(chown(directory, 65534, 65534), 0)
        let text = refusal()
        XCTAssertTrue(text.contains("\(directory) is owned by uid 65534, not by you (uid 0)"), text)
        XCTAssertTrue(text.contains("run dpfs as uid 65534"), text)
        XCTAssertFalse(text.contains("chmod"), text)
    }

    func testSecretFileOpenToOthersNamesItsModeAndTheChmod() {
        let file = DeviceSecretStore.path(of: device, in: directory)
        XCTAssertEqual(chmod(file, 0o644), 0)
        let text = refusal()
        XCTAssertTrue(text.contains("\(file) has mode 0644, open to others"), text)
        XCTAssertTrue(text.contains("(chmod 600 \(file))"), text)
    }

    func testSecretFileOfAnotherUserNamesItsOwner() throws {
        try XCTSkipUnless(geteuid() == 0, "only root can give the secret to another user")
        let file = DeviceSecretStore.path(of: device, in: directory)
        XCTAssertEqual(chown(file, 65534, 65534), 0)
        let text = refusal()
        XCTAssertTrue(text.contains("\(file) is owned by uid 65534, not by you (uid 0)"), text)
        XCTAssertFalse(text.contains("chmod"), text)
    }
}
