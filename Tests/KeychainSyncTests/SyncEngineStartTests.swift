// The sync engine's thread: one that cannot start (the daemon at RLIMIT_NPROC) is the
// caller's error and the engine's status, not an engine that pretends to run; a later
// start (a sync command's) takes it up.
import DPFSProtocol
import DataProtection
import Foundation
import Glibc
import ItemStore
@testable import KeychainSync
import Synchronization
import TestSupport
import Testing

@Suite struct SyncEngineStartTests {
    @Test func aThreadThatCannotStartIsReportedAndTriedAgain() throws {
        let made = try StoreDevice(prefix: "dpfs-syncstart")
        let (directory, device, items) = (made.directory, made.device, made.items)
        defer { withExtendedLifetime(made) {} }
        defer { try? items.close() }
        let allowed = Atomic<Bool>(false)
        let threadsStarted = Atomic<Int>(0)
        let engine = try SyncEngine(directory: directory, device: device, items: items) { (name, body) throws(PosixThread.StartError) in
            guard allowed.load(ordering: .acquiring) else { throw PosixThread.StartError(code: EAGAIN) }
            threadsStarted.add(1, ordering: .relaxed)
            return try PosixThread.start(named: name, body)
        }
        #expect(throws: PosixThread.StartError.self) { try engine.start() }
        #expect(engine.shared.withLock { $0.connection }?.hasPrefix("not running (cannot start a thread") == true)
        allowed.store(true, ordering: .releasing)
        try engine.startRunning()
        #expect(threadsStarted.load(ordering: .relaxed) == 1, "the later start takes it up")
        try engine.startRunning()
        #expect(threadsStarted.load(ordering: .relaxed) == 1, "a running engine starts no second thread")
        #expect(engine.shared.withLock { $0.connection } == nil, "connecting, no longer the failure")
        engine.stop()
    }
}
