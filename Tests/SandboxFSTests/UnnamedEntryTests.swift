// The inode table's entry for an unnamed file (an O_TMPFILE made through the mount,
// UnnamedFiles.swift): once its last open descriptor closes, only the entry's own
// keeps the inode, so the descriptor cache must never close it.
import BlockStore
import CFuse
import CLinux
import Glibc
@testable import SandboxFS
import SystemCalls
import XCTest

final class UnnamedEntryTests: HandleTableTestCase {
    // A cache of two descriptors: a few named files used go round it.
    override var cacheCapacity: Int { 2 }

    /// Uses an entry's descriptor, as a request does: reopened from its handle when the
    /// cache closed it. Its inode number, or nil when it could not be reopened.
    private func inodeNumber(of entry: Inode) -> UInt64? {
        try? entry.withDescriptor { (fd) throws(Errno) -> UInt64 in
            var st = stat()
            try Errno.check(fstat(fd, &st))
            return UInt64(st.st_ino)
        }
    }

    func testAnUnnamedFileOutlivesItsOpenDescriptorThroughItsEntry() throws {
        let table = try XCTUnwrap(table)
        let open = dpfs_open_tmpfile(mountFD, ".", 0o600)
        XCTAssertGreaterThanOrEqual(open, 0)
        var st = stat()
        XCTAssertEqual(fstat(open, &st), 0)
        let pathFD = procPath(open).withCString { Glibc.open($0, OpenFlag.path | O_CLOEXEC) }
        let unnamed = table.remember(unnamed: pathFD, st)
        XCTAssertEqual(inodeNumber(of: unnamed), UInt64(st.st_ino))
        close(open)  // the kernel's release: only the entry holds the inode now
        for index in 0..<8 {
            let fd = openat(mountFD, "f\(index)", O_CREAT | O_WRONLY | O_CLOEXEC, 0o644)
            var named = stat()
            XCTAssertEqual(fstat(fd, &named), 0)
            let handle = try XCTUnwrap(table.handle(of: fd, named))
            close(fd)
            XCTAssertNotNil(inodeNumber(of: table.remember(handle: handle, named)))
        }
        XCTAssertEqual(inodeNumber(of: unnamed), UInt64(st.st_ino), "still its own inode, after the cache went round")
        XCTAssertNoThrow(try unnamed.withDescriptor { (fd) throws(Errno) in try linkDescriptor(fd, into: mountFD, as: "named") },
                         "and a link still names it")
    }
}
