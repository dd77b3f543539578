// Items added and looked up per second with 10,000 items. A measurement, not a test:
// it runs only with DPFS_BENCH=1 (swift test --filter ItemStoreBenchmark), and prints.
import DPFSProtocol
import Foundation
import Testing
@testable import ItemStore

@Suite struct ItemStoreBenchmark {
    static let count = 10_000

    @Test(.enabled(if: ProcessInfo.processInfo.environment["DPFS_BENCH"] == "1"))
    func addAndLookupRates() throws {
        let t = try TestDevice()
        let added = try rate(Self.count) { i in
            let status = t.add(["service": "bench", "account": "user\(i)"], data: "secret-\(i)").status
            if status != 0 { throw SecError(status) }
        }
        var generator = SystemRandomNumberGenerator()
        let order = (0..<Self.count).map { _ in Int.random(in: 0..<Self.count, using: &generator) }
        let lookups = try rate(Self.count) { i in
            let response = t.find(["service": "bench", "account": "user\(order[i])"])
            guard response.items.first?.data == Data("secret-\(order[i])".utf8) else { throw SecError(response.status) }
        }
        let attributeLookups = try rate(Self.count) { i in
            let status = t.find(["service": "bench", "account": "user\(order[i])"], returning: "attributes").status
            if status != 0 { throw SecError(status) }
        }
        let misses = try rate(Self.count) { i in
            let status = t.find(["service": "bench", "account": "nobody\(i)"]).status
            if status != SecStatus.itemNotFound { throw SecError(status) }
        }
        // What every write cost before the digest was kept between writes: two scans.
        let scans = try rate(10) { _ in _ = try t.store.pool.read { try ItemStore.legacyState($0) } }
        print("""
            ItemStore with \(Self.count) items:
              full scans/s (old digest):  \(Int(scans))
              adds/s:                     \(Int(added))
              lookups/s (data):           \(Int(lookups))
              lookups/s (attributes):     \(Int(attributeLookups))
              lookups/s (no match):       \(Int(misses))
            """)
    }

    /// Calls per second of `body` over `count` calls.
    private func rate(_ count: Int, _ body: (Int) throws -> Void) throws -> Double {
        let start = ContinuousClock.now
        for i in 0..<count { try body(i) }
        let elapsed = ContinuousClock.now - start
        return Double(count) / (Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18)
    }
}
