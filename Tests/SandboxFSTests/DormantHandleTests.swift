// The inode table's handles of forgotten files (DormantHandles.swift), on a real
// directory: what a lookup may take back, and what it never may.
import BlockStore
import CFuse
import Glibc
@testable import SandboxFS
import SystemCalls
import XCTest

final class DormantHandleTests: HandleTableTestCase {
    /// A new node named `name` (a regular file, or a directory), as a lookup reads it.
    private func node(_ name: String, directory isDirectory: Bool = false) throws -> (stat, FileBirth, KernelFileHandle) {
        if isDirectory {
            XCTAssertEqual(mkdirat(mountFD, name, 0o755), 0)
        } else {
            let fd = openat(mountFD, name, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0o644)
            XCTAssertGreaterThanOrEqual(fd, 0)
            close(fd)
        }
        var st = stat()
        guard let birth = try statWithBirth(mountFD, name, &st) else {
            throw XCTSkip("this filesystem keeps no birth times: no handle is kept for a forgotten file")
        }
        let handle = try XCTUnwrap(KernelFileHandle(at: mountFD, name))
        return (st, birth, handle)
    }

    func testAForgottenFileGetsItsHandleBackOnce() throws {
        let table = try XCTUnwrap(table)
        let (st, birth, handle) = try node("f")
        let first = table.remember(handle: handle, st, birth: birth)
        table.forget(first, 1)
        let again = try XCTUnwrap(table.rememberDormant(st, birth: birth))
        XCTAssertEqual(again.handle, handle)
        XCTAssertFalse(again === first, "a new entry for the kernel")
        XCTAssertNil(table.rememberDormant(st, birth: birth), "while the kernel knows an entry, its handle is compared instead")
        table.forget(again, 1)
        XCTAssertNotNil(table.rememberDormant(st, birth: birth), "forgotten again, kept again")
    }

    func testAnotherLifeOfTheNumberGetsNothing() throws {
        let table = try XCTUnwrap(table)
        let (st, birth, handle) = try node("f")
        table.forget(table.remember(handle: handle, st, birth: birth), 1)
        let later = FileBirth(seconds: birth.seconds, nanoseconds: birth.nanoseconds &+ 1)
        XCTAssertNil(table.rememberDormant(st, birth: later))
        XCTAssertNil(table.rememberDormant(st, birth: birth), "a mismatch drops the record")
    }

    func testANumberFreedThroughTheMountKeepsNoHandle() throws {
        let table = try XCTUnwrap(table)
        let (st, birth, handle) = try node("f")
        // Freed while the kernel still knows it: its forget records nothing.
        let entry = table.remember(handle: handle, st, birth: birth)
        table.noteFreed(InodeKey(st))
        table.forget(entry, 1)
        XCTAssertNil(table.rememberDormant(st, birth: birth))
        // Freed after it was forgotten: the record goes.
        let (other, otherBirth, otherHandle) = try node("g")
        table.forget(table.remember(handle: otherHandle, other, birth: otherBirth), 1)
        table.noteFreed(InodeKey(other))
        XCTAssertNil(table.rememberDormant(other, birth: otherBirth))
    }

    func testDirectoriesAndReplacedEntriesKeepNone() throws {
        let table = try XCTUnwrap(table)
        let (dir, dirBirth, dirHandle) = try node("d", directory: true)
        table.forget(table.remember(handle: dirHandle, dir, birth: dirBirth), 1)
        XCTAssertNil(table.rememberDormant(dir, birth: dirBirth), "directories are not kept (rmdir frees unseen)")
        // An entry replaced by a lookup that met another handle for its number is stale:
        // forgetting it records nothing; the live one's handle is what comes back.
        let (st, birth, handle) = try node("f")
        let (_, _, otherHandle) = try node("g")
        let stale = table.remember(handle: otherHandle, st, birth: birth)
        let live = table.remember(handle: handle, st, birth: birth)
        XCTAssertFalse(stale === live)
        table.forget(stale, 1)
        XCTAssertNil(table.rememberDormant(st, birth: birth), "the live entry is still known")
        table.forget(live, 1)
        XCTAssertEqual(table.rememberDormant(st, birth: birth)?.handle, handle)
    }

    func testABatchOfForgetsCountsAsEachOneWould() throws {
        let table = try XCTUnwrap(table)
        let (f, fBirth, fHandle) = try node("f")
        let (g, gBirth, gHandle) = try node("g")
        let kept = table.remember(handle: fHandle, f, birth: fBirth)
        _ = table.remember(handle: fHandle, f, birth: fBirth)  // a second lookup of f
        let goes = table.remember(handle: gHandle, g, birth: gBirth)
        let before = table.count.load(ordering: .relaxed)
        let byID = [kept.nodeID: kept, goes.nodeID: goes, table.root.nodeID: table.root]
        let batch = [fuse_forget_data(ino: kept.nodeID, nlookup: 1), fuse_forget_data(ino: goes.nodeID, nlookup: 1),
                     fuse_forget_data(ino: table.root.nodeID, nlookup: 1)]
        batch.withUnsafeBufferPointer { forgets in
            table.forget(forgets) { byID[$0] ?? table.root }
        }
        XCTAssertEqual(table.count.load(ordering: .relaxed), before - 1, "g went; f keeps one lookup; the root stays")
        XCTAssertEqual(table.existing(InodeKey(f)).map { $0 === kept }, true)
        XCTAssertNil(table.existing(InodeKey(g)))
        XCTAssertEqual(table.rememberDormant(g, birth: gBirth)?.handle, gHandle, "the batch kept g's handle")
    }

    func testTheOldestRecordGoesPastTheCapacity() throws {
        let (a, aBirth, aHandle) = try node("a")
        let (b, bBirth, bHandle) = try node("b")
        let (c, cBirth, cHandle) = try node("c")
        var records = DormantHandles(capacity: 2)
        records.record(InodeKey(a), handle: aHandle, birth: aBirth)
        records.record(InodeKey(a), handle: aHandle, birth: aBirth)
        // Full: the oldest slot is a's first recording, which must not drop a's newer one.
        records.record(InodeKey(b), handle: bHandle, birth: bBirth)
        XCTAssertEqual(records.take(InodeKey(a), birth: aBirth), aHandle)
        records.record(InodeKey(a), handle: aHandle, birth: aBirth)
        // Now the oldest slot is b's: b goes, a and c stay.
        records.record(InodeKey(c), handle: cHandle, birth: cBirth)
        XCTAssertNil(records.take(InodeKey(b), birth: bBirth), "the oldest went")
        XCTAssertEqual(records.take(InodeKey(a), birth: aBirth), aHandle)
        XCTAssertEqual(records.take(InodeKey(c), birth: cBirth), cHandle)
    }
}
