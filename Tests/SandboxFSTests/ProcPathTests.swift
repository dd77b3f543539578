// withProcPath formats /proc/self/fd/N on the stack, in place of procPath's String: the
// path must be the same for every descriptor number, and must reach the node.
import Glibc
import SystemCalls
import XCTest

final class ProcPathTests: XCTestCase {
    func testTheStackPathIsTheStringPath() {
        for fd: Int32 in [0, 1, 9, 10, 99, 100, 4095, 65_536, 1_000_000_007, .max, -1, .min] {
            let formatted = withProcPath(fd) { String(cString: $0) }
            XCTAssertEqual(formatted, procPath(fd))
        }
    }

    func testThePathReachesTheDescriptorsNode() {
        let fd = open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        XCTAssertGreaterThanOrEqual(fd, 0)
        defer { close(fd) }
        var expected = stat(), reached = stat()
        XCTAssertEqual(fstat(fd, &expected), 0)
        XCTAssertNoThrow(try withProcPath(fd) { (path) throws(Errno) in try Errno.check(stat(path, &reached)) })
        XCTAssertEqual(reached.st_ino, expected.st_ino)
        XCTAssertEqual(reached.st_dev, expected.st_dev)
        // A closed descriptor's path reaches nothing, and says so as its errno.
        XCTAssertThrowsError(try withProcPath(Int32.max) { (path) throws(Errno) in try Errno.check(stat(path, &reached)) }) {
            XCTAssertEqual($0 as? Errno, Errno.noEntry)
        }
    }
}
