// The erase after too many failed passcodes gives the device fresh class keys: every
// item sealed under the old ones can never open again, and is deleted. The keybag
// counts erases; the `meta` row `erasures` counts those the store has deleted its
// items for, raised in the delete's own transaction. So an erase that a kill cut
// short (the keybag saved, the items not yet deleted) is finished when the store next
// opens, and a delete that fails while the device runs is logged and tried again
// before each request: no request answers from an item no key opens.
import DPFSProtocol
import DataProtection
import GRDB
import Logging

extension ItemStore {
    /// Deletes every item unless the store has done so for the device's last erase;
    /// returns the erases the store has now deleted its items for.
    static func finishErase(_ pool: DatabasePool, _ device: LockStateManager, _ ledger: KeychainLedger) throws -> Int {
        let erasures = device.erasures
        // Read first: a device never erased, or whose erase is done, writes nothing.
        guard try pool.read({ try deletedErasures($0) }) < erasures else { return erasures }
        try commit(pool, device, ledger) { db in
            // Checked again under the write lock: a delete that ran meanwhile (the
            // erase's observer and a request at once) is not repeated over newer items.
            guard try deletedErasures(db) < erasures else { return }
            try db.execute(sql: "DELETE FROM items")
            try db.execute(sql: "INSERT OR REPLACE INTO meta (key, value) VALUES ('erasures', ?)", arguments: [erasures])
        }
        return erasures
    }

    static func deletedErasures(_ db: Database) throws -> Int {
        try Int.fetchOne(db, sql: "SELECT value FROM meta WHERE key = 'erasures'") ?? 0
    }

    /// At the device's erase: a delete that fails is logged, and the next request
    /// tries it again (`finishPendingErase`).
    static func eraseObserved(_ pool: DatabasePool, _ device: LockStateManager, _ ledger: KeychainLedger) {
        do { _ = try finishErase(pool, device, ledger) } catch {
            Logger(label: "dpfs.keychain").error(
                "the erase could not delete the keychain's items, which no key opens now: \(error); the next keychain request tries again")
        }
    }

    /// Before a request: finishes an erase whose delete failed, or refuses the request.
    func finishPendingErase() throws {
        guard device.erasures > erasuresDeleted.load(ordering: .acquiring) else { return }
        do {
            erasuresDeleted.store(try Self.finishErase(pool, device, ledger), ordering: .releasing)
        } catch {
            throw SecError(SecStatus.io, "the erase after too many failed passcodes could not delete the items sealed before it: \(error)")
        }
    }
}
