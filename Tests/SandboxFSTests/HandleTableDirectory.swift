// A temporary directory on the backing disk with an inode table over it whose entries
// are made from file handles, as the daemon's are when it runs as root on ext4 or XFS.
import BlockStore
import Glibc
@testable import SandboxFS
import SystemCalls
import XCTest

final class HandleTableDirectory {
    let path: String
    /// Readable (open_by_handle_at refuses an O_PATH descriptor); the table's rootFD is
    /// its own O_PATH one, which the table closes.
    let fd: Int32
    let table: InodeTable

    /// Skips the test where handles cannot be made here.
    init(named prefix: String, cacheCapacity: Int = DescriptorCache.defaultCapacity) throws {
        path = try XCTUnwrap(mkdtemp(strdup("/var/tmp/\(prefix).XXXXXX")).map { String(cString: $0) })
        fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        let rootFD = open(path, OpenFlag.path | O_DIRECTORY | O_CLOEXEC)
        table = try InodeTable(rootFD: rootFD, mountFD: fd, cacheCapacity: cacheCapacity)
        guard table.descriptors != nil else {
            remove()
            throw XCTSkip("no file handles here (every entry keeps its descriptor): needs root and ext4 or XFS")
        }
    }

    func remove() {
        if fd >= 0 { close(fd) }
        _ = try? FileManager.default.removeItem(atPath: path)
    }
}

/// A test case with a HandleTableDirectory made for each test (`cacheCapacity`
/// descriptors in its cache) and removed after it.
class HandleTableTestCase: XCTestCase {
    private var directory: HandleTableDirectory?
    var cacheCapacity: Int { DescriptorCache.defaultCapacity }
    var mountFD: Int32 { directory?.fd ?? -1 }
    var table: InodeTable? { directory?.table }

    override func setUpWithError() throws {
        directory = try HandleTableDirectory(named: "dpfs-\(type(of: self))", cacheCapacity: cacheCapacity)
    }

    override func tearDown() {
        directory?.remove()
        directory = nil
    }
}
