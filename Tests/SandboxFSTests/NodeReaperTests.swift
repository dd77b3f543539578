// The reapers of removed files: while none of their threads can start, a removal parks
// nothing (the caller unlinks in place) and the failure is logged once; a later start
// takes the work back.
import DPFSProtocol
import Foundation
import Glibc
@testable import SandboxFS
import Synchronization
import XCTest

final class NodeReaperTests: XCTestCase {
    private var directory = ""
    private var sandboxFD: Int32 = -1

    override func setUpWithError() throws {
        directory = try XCTUnwrap(mkdtemp(strdup("/var/tmp/dpfs-reaper.XXXXXX")).map { String(cString: $0) })
        sandboxFD = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        XCTAssertGreaterThanOrEqual(sandboxFD, 0)
    }

    override func tearDown() {
        if sandboxFD >= 0 { close(sandboxFD) }
        _ = try? FileManager.default.removeItem(atPath: directory)
    }

    func testWithoutAReaperNothingIsParkedAndTheFailureIsLoggedOnce() throws {
        let allowed = Atomic<Bool>(false)
        let logged = Mutex<[String]>([])
        let reaper = NodeReaper(sandbox: sandboxFD, log: { line in logged.withLock { $0.append(line) } }) { (name, body) throws(PosixThread.StartError) in
            guard allowed.load(ordering: .acquiring) else { throw PosixThread.StartError(code: EAGAIN) }
            return try PosixThread.start(named: name, body)
        }
        reaper.start()
        try makeFile("first")
        XCTAssertFalse(reaper.remove(sandboxFD, "first"), "not parked: the caller unlinks it in place")
        XCTAssertTrue(exists("first"), "left where it was")
        try makeFile("second")
        XCTAssertFalse(reaper.remove(sandboxFD, "second"))
        XCTAssertEqual(logged.withLock { $0.count }, 1, "one line for the spell")
        XCTAssertTrue(logged.withLock { $0.first?.contains("cannot start a thread") ?? false })
        allowed.store(true, ordering: .releasing)
        // A start is tried again a second after the failure.
        let deadline = Date().addingTimeInterval(30)
        var parked = false
        while !parked && Date() < deadline {
            parked = reaper.remove(sandboxFD, "second")
            if !parked { Thread.sleep(forTimeInterval: 0.05) }
        }
        XCTAssertTrue(parked, "parked once a reaper runs")
        XCTAssertFalse(exists("second"))
        while reaperHoldsFiles() && Date() < deadline { Thread.sleep(forTimeInterval: 0.01) }
        XCTAssertFalse(reaperHoldsFiles(), "and unlinked by it")
    }

    private func makeFile(_ name: String) throws {
        let fd = openat(sandboxFD, name, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0o600)
        XCTAssertGreaterThanOrEqual(fd, 0)
        close(fd)
    }

    private func exists(_ name: String) -> Bool {
        var st = stat()
        return fstatat(sandboxFD, name, &st, AT_SYMLINK_NOFOLLOW) == 0
    }

    private func reaperHoldsFiles() -> Bool {
        let orphans = directory + "/" + NodeReaper.directoryName
        return !((try? FileManager.default.contentsOfDirectory(atPath: orphans)) ?? []).isEmpty
    }
}
