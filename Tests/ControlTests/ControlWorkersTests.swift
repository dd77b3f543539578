// The control workers' pool keeps its size when no thread can start (the daemon at its
// RLIMIT_NPROC): a pool none of whose threads started serves once they can, a worker
// whose replacement cannot start keeps its place, the last one free says it must not
// wait, and a place kept so goes to a new thread once one starts.
@testable import Control
import DPFSProtocol
import Foundation
import Glibc
import Synchronization
import Testing

@Suite struct ControlWorkersTests {
    @Test func aPoolWhoseThreadsCouldNotStartServesOnceTheyCan() throws {
        let starts = ThreadStarts(allowed: false)
        let lines = PosixMutex<[String]>([])
        let workers = try ControlWorkers(name: "test-unstarted", log: { line in lines.withLock { $0.append(line) } },
                                         startThread: starts.start)
        workers.start(count: 2) { connection, _ in echo(connection) }
        let (client, server) = try connectedPair()
        defer { close(client) }
        workers.add(ControlConnection(fd: server, scope: .owner))
        try send(client, "p")
        #expect(reply(client, within: .milliseconds(300)) == nil, "no thread to answer")

        starts.allowed.store(true, ordering: .releasing)
        let (other, otherServer) = try connectedPair()
        defer { close(other) }
        workers.add(ControlConnection(fd: otherServer, scope: .owner))  // the next connection tries again
        #expect(reply(client) == "p")
        try send(other, "p")
        #expect(reply(other) == "p")
        #expect(within(.seconds(10)) { threads(named: "test-unstarted") == 2 })  // each names itself
        let logged = lines.withLock { $0 }
        #expect(logged.count == 1 && logged[0].contains("cannot start a thread"), "\(logged)")
    }

    @Test func aWorkerWithoutAReplacementKeepsItsPlace() throws {
        let starts = ThreadStarts(allowed: true)
        let waiting = DispatchSemaphore(value: 0)
        let pool = PosixMutex<ControlWorkers?>(nil)
        let workers = try ControlWorkers(name: "test-kept", log: { _ in }, startThread: starts.start)
        pool.withLock { $0 = workers }
        // "w": a request that waits on someone once its worker is released, as a prompt
        // does; "n" when it may not wait. Anything else is echoed.
        workers.start(count: 2) { connection, _ in
            guard let byte = readByte(connection.fd) else { return .close }
            guard byte == UInt8(ascii: "w") else { return answer(connection.fd, byte) }
            guard pool.withLock({ $0?.release() }) == true else { return answer(connection.fd, UInt8(ascii: "n")) }
            _ = answer(connection.fd, byte)
            waiting.wait()
            return .keep
        }
        #expect(within(.seconds(10)) { threads(named: "test-kept") == 2 })
        var clients: [Int32] = []
        defer { clients.forEach { close($0) } }
        func client() throws -> Int32 {
            let (client, server) = try connectedPair()
            clients.append(client)
            workers.add(ControlConnection(fd: server, scope: .owner))
            return client
        }

        starts.allowed.store(false, ordering: .releasing)
        let first = try client()
        try send(first, "w")
        #expect(reply(first) == "w", "kept its place, another worker is free")
        let second = try client()
        try send(second, "w")
        #expect(reply(second) == "n", "the last free worker must not wait")
        let third = try client()
        try send(third, "p")
        #expect(reply(third) == "p", "and it serves")
        #expect(threads(named: "test-kept") == 2)

        starts.allowed.store(true, ordering: .releasing)
        #expect(within(.seconds(10)) { threads(named: "test-kept") == 3 }, "a new thread takes the place kept")
        waiting.signal()
        #expect(within(.seconds(10)) { threads(named: "test-kept") == 2 }, "and the worker that kept it leaves once done")
        try send(third, "p")
        #expect(reply(third) == "p")
    }
}

/// Thread starts that fail (EAGAIN, as under RLIMIT_NPROC) while not `allowed`.
final class ThreadStarts: Sendable {
    let allowed: Atomic<Bool>

    init(allowed: Bool) { self.allowed = Atomic(allowed) }

    func start(_ name: String, _ body: @escaping @Sendable () -> Void) throws(PosixThread.StartError) -> pthread_t {
        guard allowed.load(ordering: .acquiring) else { throw PosixThread.StartError(code: EAGAIN) }
        return try PosixThread.start(named: name, body)
    }
}

/// A caller's end and a daemon's end of one Unix stream connection.
private func connectedPair() throws -> (Int32, Int32) {
    var pair: [Int32] = [-1, -1]
    try #require(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &pair) == 0)
    return (pair[0], pair[1])
}

private func send(_ fd: Int32, _ text: String) throws {
    var byte = UInt8(ascii: text.unicodeScalars.first ?? "?")
    try #require(Glibc.send(fd, &byte, 1, Int32(MSG_NOSIGNAL)) == 1)
}

/// The next byte on `fd`, once it comes within `limit`.
private func reply(_ fd: Int32, within limit: Duration = .seconds(10)) -> String? {
    var ready = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
    guard poll(&ready, 1, Int32(limit / .milliseconds(1))) == 1, let byte = readByte(fd) else { return nil }
    return String(UnicodeScalar(byte))
}

private func readByte(_ fd: Int32) -> UInt8? {
    var byte: UInt8 = 0
    return recv(fd, &byte, 1, Int32(MSG_DONTWAIT)) == 1 ? byte : nil
}

private func answer(_ fd: Int32, _ byte: UInt8) -> ControlWorkers.Disposition {
    var byte = byte
    return Glibc.send(fd, &byte, 1, Int32(MSG_NOSIGNAL)) == 1 ? .keep : .close
}

/// Sends back the byte that came.
private func echo(_ connection: ControlConnection) -> ControlWorkers.Disposition {
    guard let byte = readByte(connection.fd) else { return .close }
    return answer(connection.fd, byte)
}

/// This process's threads named `name`.
private func threads(named name: String) -> Int {
    let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? []
    return tasks.filter { task in
        (try? String(contentsOfFile: "/proc/self/task/\(task)/comm", encoding: .utf8))?
            .trimmingCharacters(in: .newlines) == name
    }.count
}

/// Whether `condition` holds within `limit`, asked every 10 ms.
private func within(_ limit: Duration, _ condition: () -> Bool) -> Bool {
    let deadline = ContinuousClock.now + limit
    while ContinuousClock.now < deadline {
        if condition() { return true }
        usleep(10_000)
    }
    return condition()
}
