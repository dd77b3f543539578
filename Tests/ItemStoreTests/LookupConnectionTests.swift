// Finds run on the store's own read-only connections (LookupConnections), beside
// GRDB's pool: they must see every committed change at once, serve several threads, and
// stop when the store closes, closing before its writer.
import DPFSProtocol
import Foundation
import Synchronization
import Testing
@testable import ItemStore

@Suite struct LookupConnectionTests {
    @Test func aFindSeesEachCommitOnAConnectionItUsedBefore() throws {
        let t = try TestDevice()
        #expect(t.find(["service": "s", "account": "a"]).status == SecStatus.itemNotFound)
        for round in 0..<20 {
            t.add(["service": "s", "account": "a"], data: "v\(round)")
            #expect(t.secret(["service": "s", "account": "a"]) == "v\(round)")
            #expect(t.update(["service": "s", "account": "a"], newData: "w\(round)").status == SecStatus.success)
            #expect(t.secret(["service": "s", "account": "a"]) == "w\(round)")
            #expect(t.delete(["service": "s", "account": "a"]).status == SecStatus.success)
            #expect(t.find(["service": "s", "account": "a"]).status == SecStatus.itemNotFound)
        }
    }

    @Test func findsOnSeveralThreadsWhileItemsAreAdded() throws {
        let t = try TestDevice()
        for index in 0..<40 { t.add(["service": "s", "account": "a\(index)"], data: "v\(index)") }
        let store = t.store
        let wrong = Mutex(0)
        DispatchQueue.concurrentPerform(iterations: 8) { thread in
            for index in 0..<200 {
                if thread == 0 && index < 40 {
                    _ = store.perform(KeychainRequest(operation: .add, attributes: ["service": "more", "account": "\(index)"],
                                                      data: Data("x".utf8)))
                }
                let account = (thread * 7 + index) % 40
                let response = store.perform(KeychainRequest(operation: .find,
                                                             attributes: ["service": "s", "account": "a\(account)"]))
                if response.status != SecStatus.success || response.items.first?.data != Data("v\(account)".utf8) {
                    wrong.withLock { $0 += 1 }
                }
            }
        }
        #expect(wrong.withLock { $0 } == 0)
        #expect(t.find(["service": "more"], limit: "all").items.count == 40)
    }

    @Test func aClosedStoreRefusesFindsWithAnError() throws {
        let t = try TestDevice()
        t.add(["service": "s", "account": "a"])
        #expect(t.secret(["service": "s", "account": "a"]) == "secret")
        try t.store.close()
        let response = t.find(["service": "s", "account": "a"])
        #expect(response.status == SecStatus.io)
        #expect(response.items.isEmpty)
    }

    /// SQLite removes the -wal and -shm only when the connection that closes last can
    /// write: a store closed after lookups and reads of GRDB's pool leaves the
    /// database file alone.
    @Test func aClosedStoreLeavesNoWalOrShmBesideItsFile() throws {
        let t = try TestDevice()
        t.add(["service": "s", "account": "a"])
        #expect(t.secret(["service": "s", "account": "a"]) == "secret")
        _ = try t.store.entitlements(of: nil)
        try t.store.close()
        let name = (t.directory.itemStorePath as NSString).lastPathComponent
        let left = try FileManager.default.contentsOfDirectory(atPath: t.root).filter { $0.hasPrefix(name) }
        #expect(left == [name])
    }
}
