// Accessibility follows the device's lock state exactly as on iOS: WhenUnlocked items
// go with a lock, AfterFirstUnlock items with a restart, both come back on unlock.
import Foundation
import Security
import XCTest

final class LockStateTests: MountedDeviceTestCase {
    private func query(_ service: String) -> [String: Any] {
        [kSecClass as String: kSecClassGenericPassword, kSecAttrService as String: service,
         kSecReturnData as String: kCFBooleanTrue as Any]
    }

    private func find(_ service: String) -> OSStatus {
        var result: AnyObject?
        let status = withUnsafeMutablePointer(to: &result) {
            SecItemCopyMatching(query(service) as CFDictionary, UnsafeMutablePointer($0))
        }
        if status == errSecSuccess { XCTAssertEqual(result as? Data, Data(service.utf8)) }
        return status
    }

    private func add(_ service: String, _ accessible: CFString) -> OSStatus {
        let item: [String: Any] = [kSecClass as String: kSecClassGenericPassword, kSecAttrService as String: service,
                                   kSecAttrAccessible as String: accessible, kSecValueData as String: Data(service.utf8)]
        return SecItemAdd(item as CFDictionary, nil)
    }

    func testLockRestartUnlock() throws {
        XCTAssertEqual(add("wu", kSecAttrAccessibleWhenUnlocked), errSecSuccess)
        XCTAssertEqual(add("afu", kSecAttrAccessibleAfterFirstUnlock), errSecSuccess)

        try device.lockNow()
        XCTAssertEqual(find("wu"), errSecInteractionNotAllowed)
        XCTAssertEqual(find("afu"), errSecSuccess)
        XCTAssertEqual(add("wu2", kSecAttrAccessibleWhenUnlocked), errSecInteractionNotAllowed)
        XCTAssertEqual(add("wu", kSecAttrAccessibleWhenUnlocked), errSecInteractionNotAllowed,
                       "a duplicate of a locked item is not the caller's to learn")
        XCTAssertEqual(SecItemDelete([kSecClass as String: kSecClassGenericPassword, kSecAttrService as String: "wu"]
                                     as CFDictionary), errSecInteractionNotAllowed)

        try device.restart()
        XCTAssertEqual(find("afu"), errSecInteractionNotAllowed)
        XCTAssertEqual(find("wu"), errSecInteractionNotAllowed)

        try device.unlock()
        XCTAssertEqual(find("wu"), errSecSuccess)
        XCTAssertEqual(find("afu"), errSecSuccess)
    }
}

/// Where no device answers, every call is errSecNotAvailable, quickly.
final class ReachabilityTests: XCTestCase {
    private let query: [String: Any] = [kSecClass as String: kSecClassGenericPassword,
                                        kSecAttrService as String: "x"]

    override func tearDown() { unsetenv("DPFS_MOUNT") }

    func testNoDeviceIsErrSecNotAvailable() throws {
        let nowhere = FileManager.default.temporaryDirectory.appendingPathComponent("dpfs-nowhere-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: nowhere, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: nowhere) }
        for mountpoint in [nowhere.path, "/nonexistent/dpfs", nil] {
            if let mountpoint { setenv("DPFS_MOUNT", mountpoint, 1) } else { unsetenv("DPFS_MOUNT") }
            let start = ContinuousClock.now
            XCTAssertEqual(SecItemCopyMatching(query as CFDictionary, nil), errSecNotAvailable)
            XCTAssertEqual(SecItemAdd(query as CFDictionary, nil), errSecNotAvailable)
            XCTAssertLessThan(ContinuousClock.now - start, .seconds(2))
        }
        XCTAssertNotNil(SecCopyErrorMessageString(errSecNotAvailable, nil))
    }

    func testUnmountedDeviceIsErrSecNotAvailable() throws {
        let device = try MountedDevice()
        defer { device.tearDown() }
        setenv("DPFS_MOUNT", device.mountpoint, 1)
        var item = query
        item[kSecValueData as String] = Data("v".utf8)
        XCTAssertEqual(SecItemAdd(item as CFDictionary, nil), errSecSuccess)
        try device.dpfs("unmount", device.mountpoint)
        let start = ContinuousClock.now
        XCTAssertEqual(SecItemCopyMatching(query as CFDictionary, nil), errSecNotAvailable)
        XCTAssertLessThan(ContinuousClock.now - start, .seconds(2))
    }
}
