// SpareFiles: when a spare is made, who may take it, and that every spare not taken is
// closed (its descriptors are real unnamed files in a temporary directory).
import BlockStore
import CLinux
import DataProtection
import Glibc
@testable import SandboxFS
import SystemCalls
import XCTest

final class SpareFileTests: XCTestCase {
    private var directory = ""
    private var directoryFD: Int32 = -1
    private var table: InodeTable?
    private var made: [Int32] = []

    override func setUpWithError() throws {
        directory = try XCTUnwrap(mkdtemp(strdup("/var/tmp/dpfs-spares.XXXXXX")).map { String(cString: $0) })
        directoryFD = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        let rootFD = open(directory, OpenFlag.path | O_DIRECTORY | O_CLOEXEC)
        table = try InodeTable(rootFD: rootFD, mountFD: directoryFD)
    }

    override func tearDown() {
        table = nil
        if directoryFD >= 0 { close(directoryFD) }
        _ = try? FileManager.default.removeItem(atPath: directory)
    }

    /// A directory's entry, as the daemon has one for each directory the kernel knows.
    private func directoryNode(_ name: String) throws -> Inode {
        XCTAssertEqual(mkdirat(directoryFD, name, 0o755), 0)
        let fd = openat(directoryFD, name, OpenFlag.path | O_DIRECTORY | O_CLOEXEC)
        XCTAssertGreaterThanOrEqual(fd, 0)
        var st = stat()
        XCTAssertEqual(fstat(fd, &st), 0)
        return try XCTUnwrap(table).remember(fd: fd, st)
    }

    /// Makes an unnamed file, as the daemon makes a spare (here without contents), and
    /// notes its descriptor.
    private func make() -> (fd: Int32, contents: SpareContents?) {
        let fd = dpfs_open_tmpfile(directoryFD, ".", 0o644)
        XCTAssertGreaterThanOrEqual(fd, 0)
        made.append(fd)
        return (fd, nil)
    }

    private func isOpen(_ fd: Int32) -> Bool { fcntl(fd, F_GETFD) >= 0 }

    /// Makes a spare with contents (a header and its key, as for class none), noting the key.
    private var keys: [SecureBuffer] = []
    private func makeWithContents() -> (fd: Int32, contents: SpareContents?) {
        let fd = make().fd
        let key = SecureBuffer.random(count: 32)
        keys.append(key)
        let slot = FileHeader.KeySlot(generation: 1, protectionClass: .none, wrappedKey: [UInt8](repeating: 0, count: 72))
        let header = FileHeader(fileID: [UInt8](repeating: 1, count: FileHeader.fileIDSize), slot: slot)
        return (fd, SpareContents(protectionClass: .none, header: header, key: key, handle: nil))
    }

    func testASparesKeyIsWipedWheneverTheSpareIsNotTaken() throws {
        let spares = SpareFiles(), a = try directoryNode("a"), b = try directoryNode("b")
        spares.created(in: a, mode: 0o100644, make: makeWithContents)
        spares.created(in: a, mode: 0o100644, make: makeWithContents)
        spares.created(in: b, mode: 0o100644, make: makeWithContents)
        XCTAssertEqual(keys.count, SpareFiles.depth)
        XCTAssertTrue(keys.allSatisfy(\.isWiped), "closed as stale: wiped")
        spares.created(in: b, mode: 0o100644, make: makeWithContents)
        XCTAssertEqual(keys.count, 2 * SpareFiles.depth)
        spares.discard()
        XCTAssertTrue(keys.allSatisfy(\.isWiped), "discarded (a lock): wiped")
        spares.created(in: b, mode: 0o100644, make: makeWithContents)
        spares.created(in: b, mode: 0o100644) { let made = makeWithContents(); spares.discard(); return made }
        XCTAssertEqual(keys.count, 2 * SpareFiles.depth + 1, "a discard stops the making")
        XCTAssertTrue(keys.allSatisfy(\.isWiped), "made across a discard, not kept: wiped")
        spares.created(in: b, mode: 0o100644, make: makeWithContents)
        spares.created(in: b, mode: 0o100644, make: makeWithContents)
        let taken = try XCTUnwrap(spares.take(in: b, mode: 0o100644))
        XCTAssertFalse(try XCTUnwrap(taken.contents).key.isWiped, "taken: the create's to use")
        close(taken.fd)
        taken.contents?.key.wipe()
        spares.discard()
    }

    func testARunKeepsItsSparesAheadAndEachIsTakenOnce() throws {
        let spares = SpareFiles(), a = try directoryNode("a")
        spares.created(in: a, mode: 0o100644, make: make)
        XCTAssertTrue(made.isEmpty, "one create is not a run")
        XCTAssertNil(spares.take(in: a, mode: 0o100644))
        spares.created(in: a, mode: 0o100644, make: make)
        XCTAssertEqual(made.count, SpareFiles.depth, "the second in a row makes the next files")
        XCTAssertNil(spares.take(in: a, mode: 0o100600), "not for another mode")
        XCTAssertEqual(spares.take(in: a, mode: 0o100644)?.fd, made[0], "the oldest first")
        spares.created(in: a, mode: 0o100644, make: make)
        XCTAssertEqual(made.count, SpareFiles.depth + 1, "the one taken is replaced")
        var taken: [Int32] = []
        while let spare = spares.take(in: a, mode: 0o100644) { taken.append(spare.fd) }
        XCTAssertEqual(taken, Array(made.dropFirst()), "each is taken once")
        for fd in made { close(fd) }
    }

    func testCreatesAnsweredAtOnceMakeNoMoreThanTheDepth() throws {
        let spares = SpareFiles(), a = try directoryNode("a")
        spares.created(in: a, mode: 0o100644, make: make)
        // Another worker answers a create in a while this one makes a spare.
        spares.created(in: a, mode: 0o100644) {
            let fd = make()
            spares.created(in: a, mode: 0o100644, make: make)
            return fd
        }
        XCTAssertEqual(made.count, SpareFiles.depth, "ready and being made count alike")
        spares.discard()
        XCTAssertFalse(made.contains(where: isOpen))
    }

    func testADiscardWaitsForASpareBeingMadeWhichItsMakerCloses() throws {
        let spares = SpareFiles(), a = try directoryNode("a"), directoryFD = directoryFD
        spares.created(in: a, mode: 0o100644) { (-1, nil) }
        let making = DispatchSemaphore(value: 0), made = MadeDescriptor()
        let maker = Thread {
            spares.created(in: a, mode: 0o100644) {
                made.fd = dpfs_open_tmpfile(directoryFD, ".", 0o644)
                making.signal()
                usleep(20_000)  // still being made when the discard comes
                return (made.fd, nil)
            }
        }
        maker.start()
        making.wait()
        XCTAssertGreaterThanOrEqual(made.fd, 0)
        XCTAssertTrue(spares.discard(), "a spare being made counts as one")
        XCTAssertFalse(isOpen(made.fd), "its maker closed it before the discard returned")
        XCTAssertNil(spares.take(in: a, mode: 0o100644))
    }

    func testASpareLeftForAnotherDirectoryIsClosed() throws {
        let spares = SpareFiles(), a = try directoryNode("a"), b = try directoryNode("b")
        spares.created(in: a, mode: 0o100644, make: make)
        spares.created(in: a, mode: 0o100644, make: make)
        let runOfA = made
        spares.created(in: b, mode: 0o100644, make: make)
        XCTAssertFalse(runOfA.contains(where: isOpen), "the run moved on: its spares are closed")
        XCTAssertEqual(made.count, SpareFiles.depth, "and the first create in b starts no run")
        XCTAssertNil(spares.take(in: a, mode: 0o100644))
    }

    func testADiscardClosesTheSpareAndEndsTheRun() throws {
        let spares = SpareFiles(), a = try directoryNode("a")
        spares.created(in: a, mode: 0o100644, make: make)
        spares.created(in: a, mode: 0o100644, make: make)
        XCTAssertEqual(made.count, SpareFiles.depth)
        spares.discard()
        XCTAssertFalse(made.contains(where: isOpen))
        XCTAssertNil(spares.take(in: a, mode: 0o100644))
        spares.created(in: a, mode: 0o100644, make: make)
        XCTAssertEqual(made.count, SpareFiles.depth, "the next create starts a run again")
    }

    func testASpareIsNotKeptOnceTheRunHasMovedOn() throws {
        let spares = SpareFiles(), a = try directoryNode("a"), b = try directoryNode("b")
        spares.created(in: a, mode: 0o100644, make: make)
        // Another worker answers a create in b while this one makes a's spare.
        spares.created(in: a, mode: 0o100644) { let fd = make(); spares.created(in: b, mode: 0o100644) { (-1, nil) }; return fd }
        let spare = try XCTUnwrap(made.first)
        XCTAssertFalse(isOpen(spare), "made for a run that ended: closed")
        XCTAssertNil(spares.take(in: a, mode: 0o100644))
    }

    func testASpareMadeAcrossADiscardIsNotKept() throws {
        let spares = SpareFiles(), a = try directoryNode("a")
        spares.created(in: a, mode: 0o100644, make: make)
        // A chmod g+s of the directory while the spare is being made.
        spares.created(in: a, mode: 0o100644) { let fd = make(); spares.discard(); return fd }
        let spare = try XCTUnwrap(made.first)
        XCTAssertFalse(isOpen(spare), "made before the change: closed, not kept")
        XCTAssertNil(spares.take(in: a, mode: 0o100644))
    }
}

/// A descriptor a maker thread made, read once the discard it raced has returned.
private final class MadeDescriptor: @unchecked Sendable {
    var fd: Int32 = -1
}
