// Many callers at once on the control socket: every call gets its own right answer,
// connections do not each cost the daemon a thread, clients that stall halfway
// through a frame hold up nobody else's calls, and a quiet connection is closed.
import Foundation
import Glibc
import Security
import XCTest

final class ControlConcurrencyTests: MountedDeviceTestCase {
    func testManyThreadsGetTheirOwnAnswers() throws {
        let daemon = try XCTUnwrap(device.daemonPID)
        let threadsBefore = try threadCount(of: daemon)

        let threads = 24
        XCTAssertEqual(runThreads(threads, calls: 20, service: "many"), [])

        // The Security library keeps up to 16 of those connections open, idle: a thread
        // per connection would show here.
        let threadsAfter = try threadCount(of: daemon)
        XCTAssertLessThan(threadsAfter - threadsBefore, 8, "daemon threads went from \(threadsBefore) to \(threadsAfter)")
        var result: CFTypeRef?
        let all: [String: Any] = [kSecClass as String: kSecClassGenericPassword, kSecAttrService as String: "many",
                                  kSecMatchLimit as String: kSecMatchLimitAll, kSecReturnAttributes as String: true]
        XCTAssertEqual(SecItemCopyMatching(all as CFDictionary, &result), errSecSuccess)
        XCTAssertEqual((result as? [[String: Any]])?.count, threads * 20)
    }

    func testStalledClientsHoldUpNoOne() throws {
        let socketPath = try controlSocket()
        let header: [UInt8] = Array("DPFC".utf8) + [0, 2, 0, 0]
        // More stalled clients than the daemon has workers, each waiting in another place:
        // inside the header, inside the body, inside a 64 KiB secret.
        let partialFrames: [[UInt8]] = [
            Array(header.prefix(6)),
            header + [0, 0, 0, 100, 0, 0, 0, 0] + [UInt8](repeating: 9, count: 10),
            header + [0, 0, 0, 0, 0, 1, 0, 4] + [0, 1, 0, 0] + [UInt8](repeating: 7, count: 30_000),
            Array(header.prefix(2)),
            header + [0, 0, 0, 50, 0, 0, 0, 0],
        ]
        var stalled: [Int32] = []
        defer { stalled.forEach { close($0) } }
        for frame in partialFrames {
            let fd = try connect(to: socketPath)
            stalled.append(fd)
            XCTAssertEqual(send(fd, frame, frame.count, Int32(MSG_NOSIGNAL)), frame.count)
        }

        // Every call of a client that is not stalled is answered, and promptly: a stalled
        // client's frame would keep a thread waiting up to 30 s.
        let started = ContinuousClock.now
        XCTAssertEqual(runThreads(4, calls: 10, service: "beside-stalled", deadline: .seconds(60)), [])
        let elapsed = ContinuousClock.now - started
        XCTAssertLessThan(elapsed, .seconds(8), "40 calls beside stalled clients took \(elapsed)")

        // The stalled clients are still connected, nothing answered to them yet.
        for fd in stalled {
            var byte: UInt8 = 0
            XCTAssertEqual(recv(fd, &byte, 1, Int32(MSG_DONTWAIT)), -1)
            XCTAssertEqual(errno, EAGAIN)
        }
    }

    func testQuietConnectionIsClosedAfterThirtySeconds() throws {
        let fd = try connect(to: try controlSocket())
        defer { close(fd) }
        let connected = ContinuousClock.now
        var timeout = timeval(tv_sec: 90, tv_usec: 0)  // the deadline, far past the limit
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var byte: UInt8 = 0
        XCTAssertEqual(recv(fd, &byte, 1, 0), 0, "the daemon did not close the quiet connection")
        let quiet = ContinuousClock.now - connected
        XCTAssertGreaterThanOrEqual(quiet, .seconds(29))
        XCTAssertLessThan(quiet, .seconds(60))
    }

    /// Runs `count` threads at once (they start together), each adding then finding
    /// `calls` items of its own; the calls that went wrong. Waits at most `deadline`.
    private func runThreads(_ count: Int, calls: Int, service: String, deadline: Duration = .seconds(120)) -> [String] {
        let failures = Failures()
        let ready = DispatchSemaphore(value: 0), go = DispatchSemaphore(value: 0), done = DispatchSemaphore(value: 0)
        for thread in 0..<count {
            Thread {
                ready.signal()
                go.wait()
                for index in 0..<calls {
                    let account = "\(thread)-\(index)", secret = Data("secret of \(service) \(account)".utf8)
                    let query: [String: Any] = [kSecClass as String: kSecClassGenericPassword,
                                                kSecAttrService as String: service, kSecAttrAccount as String: account]
                    var item = query
                    item[kSecValueData as String] = secret
                    let added = SecItemAdd(item as CFDictionary, nil)
                    var find = query
                    find[kSecReturnData as String] = true
                    var result: CFTypeRef?
                    let found = SecItemCopyMatching(find as CFDictionary, &result)
                    if added != errSecSuccess || found != errSecSuccess || (result as? Data) != secret {
                        failures.record("\(account): add \(added), find \(found)")
                    }
                }
                done.signal()
            }.start()
        }
        for _ in 0..<count { ready.wait() }
        for _ in 0..<count { go.signal() }
        let (seconds, attoseconds) = deadline.components
        let end = DispatchTime.now() + .seconds(Int(seconds)) + .nanoseconds(Int(attoseconds / 1_000_000_000))
        for _ in 0..<count where done.wait(timeout: end) == .timedOut {
            return failures.all + ["threads still running after \(deadline)"]
        }
        return failures.all
    }

    private func threadCount(of pid: Int32) throws -> Int {
        try FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task").count
    }

    private func controlSocket() throws -> String {
        let (status, path, errors) = try MountedDevice.run(
            ["--absolute-names", "--only-values", "-n", "user.dpfs.control", device.mountpoint], executable: "/usr/bin/getfattr")
        guard status == 0, !path.isEmpty else { throw DeviceError("the mount names no control socket: \(errors)") }
        return path
    }

    private func connect(to path: String) throws -> Int32 {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            raw.copyBytes(from: path.utf8.prefix(raw.count - 1))
        }
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        guard fd >= 0, connected == 0 else { throw DeviceError("cannot connect to \(path)") }
        return fd
    }
}
