// Root finds another user's daemon's socket in /proc/net/unix by its name, PID.sock,
// among the listening sockets alone.
@testable import DPFSProtocol
import Foundation
import Glibc
import Testing

@Suite struct ListeningSocketTests {
    @Test func aListeningSocketIsFoundByItsName() throws {
        let directory = NSTemporaryDirectory() + "dpfs-listening-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: false)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let name = "\(UInt32.random(in: 1_000_000...UInt32.max)).sock"
        let path = directory + "/" + name
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        try #require(fd >= 0)
        defer { close(fd) }
        var address = try #require(UnixAddress(path: path))
        try #require(address.withSockaddr { bind(fd, $0, $1) } == 0)
        #expect(ControlClient.listeningSocket(named: name) == nil, "bound, not yet listening")
        try #require(listen(fd, 1) == 0)
        #expect(ControlClient.listeningSocket(named: name) == path)
    }

    /// The kernel makes /proc/net/unix a page or so per read: a machine with many
    /// sockets lists most of them beyond the first read.
    @Test func aSocketAmongManyIsFound() throws {
        let directory = NSTemporaryDirectory() + "dpfs-listening-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: false)
        var descriptors: [Int32] = []
        defer {
            descriptors.forEach { close($0) }
            try? FileManager.default.removeItem(atPath: directory)
        }
        for index in 0..<600 {
            let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
            try #require(fd >= 0)
            descriptors.append(fd)
            var address = try #require(UnixAddress(path: directory + "/\(index).other"))
            try #require(address.withSockaddr { bind(fd, $0, $1) } == 0 && listen(fd, 1) == 0)
        }
        let names = (0..<20).map { _ in "\(UInt32.random(in: 1_000_000...UInt32.max)).sock" }
        for name in names {
            let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
            try #require(fd >= 0)
            descriptors.append(fd)
            var address = try #require(UnixAddress(path: directory + "/" + name))
            try #require(address.withSockaddr { bind(fd, $0, $1) } == 0 && listen(fd, 1) == 0)
        }
        let found = names.filter { ControlClient.listeningSocket(named: $0) == directory + "/" + $0 }
        #expect(found.count == names.count, "found \(found.count) of \(names.count)")
    }
}
