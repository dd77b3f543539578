// A client gives up on a daemon that takes no connection: AF_UNIX connect(2) waits
// for room in the listener's backlog, which a stopped or flooded daemon never makes.
import DPFSProtocol
import Foundation
import Glibc
import Synchronization
import Testing

@Suite struct ControlClientConnectTests {
    @Test func aConnectToAFullBacklogGivesUpWithinItsDeadline() throws {
        let directory = try #require(mkdtemp(strdup(NSTemporaryDirectory() + "dpfs-connect-XXXXXX")).map { String(cString: $0) })
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/full.sock"
        let listener = try Self.listener(at: path)
        var waiting: [Int32] = []
        defer { waiting.forEach { close($0) } }
        // Backlog 0 holds one connection that is never accepted; the next finds no room.
        while let connection = Self.connectWithoutWaiting(to: path) { waiting.append(connection) }
        try #require(errno == EAGAIN && !waiting.isEmpty, "the backlog did not fill: \(String(cString: strerror(errno)))")

        let failure = Mutex<String?>(nil)
        let done = DispatchSemaphore(value: 0)
        Thread {
            do {
                _ = try ControlClient(appSocket: path, mountpoint: directory, timeout: 1)
                failure.withLock { $0 = "connected" }
            } catch {
                failure.withLock { $0 = "\(error)" }
            }
            done.signal()
        }.start()
        // A generous bound: the point is that it returns, not how exactly on time.
        let returned = done.wait(timeout: .now() + 20) == .success
        close(listener)  // a connect still waiting ends now, refused
        if !returned { done.wait() }
        #expect(returned, "the connect still waited after 20 s")
        let message = failure.withLock { $0 } ?? "nothing"
        #expect(message == "the dpfs daemon of \(directory) did not answer within 1 s", "\(message)")
    }

    private static func listener(at path: String) throws -> Int32 {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        var address = try #require(UnixAddress(path: path))
        try #require(fd >= 0 && address.withSockaddr({ bind(fd, $0, $1) }) == 0 && listen(fd, 0) == 0)
        return fd
    }

    /// A connection made without waiting for room, or nil (errno says why).
    private static func connectWithoutWaiting(to path: String) -> Int32? {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
        guard fd >= 0 else { return nil }
        guard var address = UnixAddress(path: path) else { close(fd); errno = ENAMETOOLONG; return nil }
        guard address.withSockaddr({ connect(fd, $0, $1) }) == 0 else {
            let error = errno
            close(fd)
            errno = error
            return nil
        }
        return fd
    }
}
