// Without a reachable device every call fails with a clear error, quickly.
@testable import DataProtectionKit
import DPFSProtocol
import Foundation
import Glibc
import XCTest

final class NoDeviceTests: XCTestCase {
    func testNoMountEnvironmentIsNoDevice() {
        let saved = ProcessInfo.processInfo.environment["DPFS_MOUNT"]
        unsetenv("DPFS_MOUNT")
        defer { if let saved { setenv("DPFS_MOUNT", saved, 1) } }
        XCTAssertThrowsError(try DeviceControl()) { XCTAssertEqual($0 as? DeviceError, .noDevice) }
        XCTAssertThrowsError(try ProtectedData.startObserving()) { XCTAssertEqual($0 as? DeviceError, .noDevice) }
        XCTAssertFalse(ProtectedData.isAvailable)
    }

    func testAPlainDirectoryIsNotMounted() throws {
        let started = Date()
        let path = NSTemporaryDirectory()
        XCTAssertThrowsError(try DeviceControl(mountpoint: path).state) { error in
            XCTAssertEqual(error as? DeviceError, .notMounted(path))
            XCTAssertTrue("\(error)".contains("not a mounted dpfs sandbox"))
        }
        XCTAssertThrowsError(try DeviceControl(mountpoint: "/nonexistent/dpfs").lock(now: true))
        XCTAssertLessThan(Date().timeIntervalSince(started), 2)
    }

    func testAnUnreachableDaemonIsNamedOnce() {
        let refused = DeviceChannel.translate(ControlClientError.cannotConnect("/m", ECONNREFUSED),
                                              mountpoint: "/m", timeout: 5)
        XCTAssertEqual("\(refused)", "cannot reach the dpfs daemon of /m: \(String(cString: strerror(ECONNREFUSED)))")
        let died = DeviceChannel.translate(ControlClientError.daemonDied("/m"), mountpoint: "/m", timeout: 5)
        XCTAssertEqual("\(died)".components(separatedBy: "dpfs daemon of").count, 2, "\(died)")
    }
}
