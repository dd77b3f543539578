// Copies of one device directory share its record in the secret store: while one is
// in use, the lock keyed by the device's UUID refuses every other, naming the first.
import DataProtection
import Foundation
import Glibc
import XCTest

final class DeviceUseLockTests: XCTestCase {
    private var copies: [String] = []
    private var held: [Int32] = []

    override func tearDown() {
        for fd in held { close(fd) }
        held = []
        for copy in copies { try? FileManager.default.removeItem(atPath: copy) }
        copies = []
    }

    private func copy(of device: TestDevice) throws -> DeviceDirectory {
        let copy = device.directory.root + "-copy"
        try FileManager.default.copyItem(atPath: device.directory.root, toPath: copy)
        copies.append(copy)
        return DeviceDirectory(copy)
    }

    private func take(_ directory: DeviceDirectory) throws -> Int32 {
        let fd = try XCTUnwrap(try DeviceUseLock.take(for: directory), "a file store always has the lock")
        held.append(fd)
        return fd
    }

    func testACopyIsRefusedWhileTheOriginalIsInUseNamingTheOriginal() throws {
        let device = try TestDevice()
        let copy = try copy(of: device)
        _ = try take(device.directory)
        XCTAssertThrowsError(try DeviceUseLock.take(for: copy)) {
            guard case .copyInUse(_, let holder, _) = $0 as? DeviceError else { return XCTFail("\($0)") }
            XCTAssertEqual(holder, device.directory.root)
            XCTAssertTrue("\($0)".hasSuffix("a copy of a device directory cannot be mounted beside it"), "\($0)")
        }
    }

    func testTheCopyIsTakenOnceTheOriginalLetsGo() throws {
        let device = try TestDevice()
        let copy = try copy(of: device)
        let original = try take(device.directory)
        close(original)
        held.removeAll { $0 == original }
        _ = try take(copy)
        XCTAssertThrowsError(try DeviceUseLock.take(for: device.directory), "and then the original is the copy refused")
    }

    func testAnotherDeviceIsNotRefused() throws {
        let first = try TestDevice()
        let second = try TestDevice()
        _ = try take(first.directory)
        _ = try take(second.directory)
    }
}
