// AbsolutePath resolves a relative symbolic link against its own directory, whatever
// the working directory holds, and keeps a name that does not exist yet.
import DataProtection
import Foundation
import XCTest

final class AbsolutePathTests: XCTestCase {
    func testARelativeLinkResolvesAgainstItsOwnDirectory() throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("dpfs-path-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: root) }
        for directory in ["a/x", "cwd/x"] {
            try FileManager.default.createDirectory(atPath: root + "/" + directory, withIntermediateDirectories: true)
        }
        try FileManager.default.createSymbolicLink(atPath: root + "/a/l", withDestinationPath: "x")
        let real = AbsolutePath.of(root)
        let before = FileManager.default.currentDirectoryPath
        XCTAssertTrue(FileManager.default.changeCurrentDirectoryPath(root + "/cwd"))
        defer { _ = FileManager.default.changeCurrentDirectoryPath(before) }
        XCTAssertEqual(AbsolutePath.of(root + "/a/l"), real + "/a/x", "not the working directory's x")
        XCTAssertEqual(AbsolutePath.of(root + "/a/l/new"), real + "/a/x/new", "a new name under a link")
        XCTAssertEqual(AbsolutePath.of("x"), real + "/cwd/x", "relative to the working directory")
        XCTAssertEqual(AbsolutePath.of("../a/./l"), real + "/a/x")
        XCTAssertEqual(DeviceDirectory(root + "/a/l").root, real + "/a/x")
    }
}
