// Inode.withOpenDescriptor, which the reapers' discard of a removed file uses: it runs
// only on a descriptor open at that moment, never reopens one from its handle (the
// inode may be freed, and the handle meet ESTALE), and a forget that comes meanwhile
// closes the descriptor only once the body is done with it.
import BlockStore
import Glibc
@testable import SandboxFS
import SystemCalls
import XCTest

final class OpenDescriptorTests: HandleTableTestCase {
    /// An entry for a new file `name`, made from its handle: no descriptor open yet.
    private func entryFromHandle(_ name: String) throws -> (Inode, stat) {
        let table = try XCTUnwrap(table)
        let fd = openat(mountFD, name, O_CREAT | O_WRONLY | O_CLOEXEC, 0o644)
        XCTAssertGreaterThanOrEqual(fd, 0)
        defer { close(fd) }
        var st = stat()
        XCTAssertEqual(fstat(fd, &st), 0)
        let handle = try XCTUnwrap(table.handle(of: fd, st))
        return (table.remember(handle: handle, st), st)
    }

    func testRunsOnlyOnADescriptorOpenNow() throws {
        let (entry, st) = try entryFromHandle("file")
        XCTAssertFalse(entry.holdsDescriptor)
        XCTAssertNil(try entry.withOpenDescriptor { _ in true }, "ran with no descriptor open")
        XCTAssertFalse(entry.holdsDescriptor, "reopened the node from its handle")

        try entry.withDescriptor { _ in }  // a request's use opens it
        let number = try entry.withOpenDescriptor { (fd) throws(Errno) -> UInt64 in
            var opened = stat()
            try Errno.check(fstat(fd, &opened))
            return UInt64(opened.st_ino)
        }
        XCTAssertEqual(number, UInt64(st.st_ino))
    }

    func testNeverReopensAFreedInode() throws {
        let table = try XCTUnwrap(table)
        let (entry, _) = try entryFromHandle("removed")
        try entry.withDescriptor { _ in }
        XCTAssertEqual(unlinkat(mountFD, "removed", 0), 0)
        table.forget(entry, 1)  // the kernel forgets it: the descriptor closes, the inode is freed
        XCTAssertNil(try entry.withOpenDescriptor { _ in true })
        // What the old check-then-pin did when the forget came in between.
        XCTAssertThrowsError(try entry.withDescriptor { _ in }) { error in
            XCTAssertEqual(error as? Errno, Errno(ESTALE))
        }
    }

    func testAForgetMeanwhileClosesTheDescriptorAfterTheBody() throws {
        let table = try XCTUnwrap(table)
        let (entry, st) = try entryFromHandle("busy")
        try entry.withDescriptor { _ in }
        let numberAfterForget = try entry.withOpenDescriptor { (fd) throws(Errno) -> UInt64 in
            table.forget(entry, 1)
            var opened = stat()
            try Errno.check(fstat(fd, &opened))
            return UInt64(opened.st_ino)
        }
        XCTAssertEqual(numberAfterForget, UInt64(st.st_ino), "the descriptor closed under the body")
        XCTAssertFalse(entry.holdsDescriptor, "the forgotten entry's descriptor stayed open")
    }
}
