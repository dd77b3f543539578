// The device's keychain: a SQLite database beside the sandbox whose item
// secrets are sealed under the class key of each item's accessibility. This file is
// the entry point; each operation lives in its own file.
import CSQLiteConfig
import DataProtection
import DPFSProtocol
import Foundation
import GRDB
import Logging
import Synchronization

public final class ItemStore: Sendable {
    private let verified: VerifiedKeychain
    /// The store's database for writing, from `open` on.
    private let database = Mutex<DatabasePool?>(nil)
    private let lookups: LookupConnections
    let device: LockStateManager
    let keys: ItemKeys
    let ledger: KeychainLedger
    /// The device's simulated user, asked before an item behind an access control is read.
    public let user: SimulatedUser
    private let observerID = Mutex<UInt64?>(nil)
    /// The device's erases this store has deleted its items for (ItemStore+Erase), as
    /// far as it knows: each request compares the device's count with it.
    let erasuresDeleted = Atomic<Int>(0)
    /// Callers' access scopes by bundle ID (nil for the sandbox's app). Only this store
    /// registers apps while the device runs, so it knows when to forget them.
    private let callers = PosixMutex<[String?: AccessScope]>([:])
    /// Told of every change an app makes (keychain sync pushes them).
    public let changeObservers = KeychainChangeObservers()

    /// Opens (creating if needed) the store of a running device, once `verify` accepts it.
    public convenience init(path: String, device: LockStateManager) throws {
        self.init(verified: try Self.verify(path: path, device: device), device: device)
        try open()
    }

    /// The store of the keychain `verify` accepted, not yet open: `open` opens it.
    public init(verified: VerifiedKeychain, device: LockStateManager) {
        self.verified = verified
        self.lookups = LookupConnections(path: verified.path)
        self.ledger = KeychainLedger(path: verified.path)
        self.device = device
        self.keys = ItemKeys(metadataKey: device.metadataKey)
        self.user = SimulatedUser(device: device)
    }

    /// Opens the keychain for writing (creating it if needed), applies the schema's
    /// migrations, and deletes what an erase or a passcode removal made while no store
    /// was listening left behind. This changes the file even with nothing to write
    /// (WAL mode, GRDB's table made and dropped to start the -wal, a checkpoint at
    /// close), so the daemon opens it last, once the mount stands: a mount refused or
    /// failing before then leaves the keychain's files as it found them.
    public func open() throws {
        let path = verified.path
        guard database.withLock({ $0 == nil }) else { throw ItemStoreError("the item store \(path) is open already") }
        let pool: DatabasePool
        do { pool = try Schema.open(path) } catch { throw KeychainIntegrity.damage(at: path) ?? error }
        ledger.watch(pool)
        // The rows' digest as `verify` read them: the file it checked, unchanged since
        // (the daemon holds the mount lock), so no write scans them again.
        ledger.keep(verified.digest)
        ledger.files.noteOwnWrite()
        database.withLock { $0 = pool }
        let (device, ledger) = (device, ledger)
        let id = device.observe { [weak device] event in
            switch event.event {
            case .passcodeChanged:
                guard let device, !device.passcodeSet else { return }
                // Left for the store's next open, which deletes them too; until then
                // no query without a passcode matches them.
                do { try Self.destroyPasscodeItems(pool, device, ledger) } catch {
                    Logger(label: "dpfs.keychain").error(
                        "the passcode's removal could not delete its WhenPasscodeSetThisDeviceOnly items: \(error); the keychain's next open does")
                }
            case .erased:
                // The class keys were replaced: every sealed secret is unreadable now.
                if let device { Self.eraseObserved(pool, device, ledger) }
            default:
                break
            }
        }
        observerID.withLock { $0 = id }
        // The device may have been erased, or its passcode removed, while no store was
        // listening, or while one was and its delete failed.
        erasuresDeleted.store(try Self.finishErase(pool, device, ledger), ordering: .releasing)
        if !device.passcodeSet { try Self.destroyPasscodeItems(pool, device, ledger) }
        ledger.files.noteOwnWrite()
    }

    deinit {
        if let id = observerID.withLock({ $0 }) { device.stopObserving(id) }
    }

    /// The database, once its files are found as the daemon's last write left them
    /// (KeychainFileWatch); an error until `open`.
    var pool: DatabasePool {
        get throws {
            guard let pool = database.withLock({ $0 }) else {
                throw ItemStoreError("the item store \(verified.path) is not open")
            }
            try ensureFilesUnchanged(pool)
            return pool
        }
    }

    private func ensureFilesUnchanged(_ pool: DatabasePool) throws {
        guard try ledger.files.differ() else { return }
        let (files, device) = (ledger.files, device)
        try pool.barrierWriteWithoutTransaction { _ in try files.verify(device: device) }
    }

    /// Closes the database at the daemon's end, after `settle`: its write-ahead log is
    /// folded into the database file and emptied now, so that the file alone is
    /// complete when `dpfs unmount` returns, whatever threads still hold the store. A
    /// request that comes later gets an error.
    ///
    /// SQLite removes the -wal and the -shm only when the connection that closes last
    /// can write, and GRDB's `close` closes the pool's writer before its read-only
    /// readers: so the lookups' and the pool's readers close first, and the writer,
    /// closing last, leaves the database file alone beside the device.
    ///
    /// A second call does nothing: the pool is taken out before it is closed, and a
    /// closed pool given to SQLite again would be a use after free.
    public func close() throws {
        try lookups.close()
        guard let pool = database.withLock({ database in defer { database = nil }; return database }) else { return }
        if ledger.files.stopped {
            // A file another hand put there stays as it was found, the evidence the next
            // mount refuses: no checkpoint now, and none at the writer's close.
            try pool.writeWithoutTransaction { db in
                guard let connection = db.sqliteConnection, dpfs_sqlite3_no_checkpoint_on_close(connection) else {
                    throw ItemStoreError("cannot close the item store \(verified.path) without a checkpoint")
                }
            }
        } else {
            try pool.writeWithoutTransaction { _ = try $0.checkpoint(.truncate) }
        }
        pool.releaseMemory()
        try pool.close()
    }

    /// Creates the database of a new device directory and registers the sandbox's
    /// own app: from its entitlements plist, else as `appBundleID` (default
    /// com.example.app) of team XXXXXXXXXX whose only group is TEAMID.bundleID.
    public static func initialize(path: String, appBundleID: String?, entitlementsPlist: String?) throws {
        var plist: Data?
        if let entitlementsPlist {
            guard let data = FileManager.default.contents(atPath: entitlementsPlist) else {
                throw ItemStoreError("cannot read the entitlements \(entitlementsPlist)")
            }
            plist = data
        }
        try initialize(path: path, appBundleID: appBundleID, entitlements: plist)
    }

    /// As above, with the entitlements plist's bytes (a restore takes them from the backup).
    public static func initialize(path: String, appBundleID: String?, entitlements plist: Data?) throws {
        let app: Entitlements
        if let plist {
            app = try Entitlements(plist: plist, bundleID: appBundleID)
        } else {
            app = Entitlements(bundleID: appBundleID ?? Entitlements.placeholderBundleID)
        }
        let pool = try Schema.open(path)
        try pool.write { try AppRegistry.register(app, plist: plist, isSandboxApp: true, in: $0) }
    }

    /// Registers another app (or re-registers one with new entitlements); returns its bundle ID.
    public func registerApp(entitlements: Data) throws -> String {
        let app = try Entitlements(plist: entitlements)
        try commit { try AppRegistry.register(app, plist: entitlements, isSandboxApp: false, in: $0) }
        callers.withLock { $0.removeAll() }
        return app.bundleID
    }

    /// The entitlements of a registered app (nil: the sandbox's own), e.g. for its
    /// default data protection.
    public func entitlements(of bundleID: String?) throws -> Entitlements {
        try pool.read { try AppRegistry.caller(bundleID, in: $0) }
    }

    /// The sandbox's own app's bundle ID, from the callers' cache: every status names
    /// it, and every client connection begins with a status.
    public func sandboxAppBundleID() throws -> String {
        try scope(of: nil).bundleID
    }

    /// The registered apps, the sandbox's own first; with `only`, that app alone (none
    /// when it is not registered).
    public func listedApps(only bundleID: String? = nil) throws -> [ListedApp] {
        do {
            return try pool.read { try AppRegistry.listed(only: bundleID, in: $0) }
        } catch let error as SecError {
            // A list has no OSStatus to carry; its reader wants the reason.
            throw EntitlementsError(error.reason ?? "the registered apps cannot be read")
        }
    }

    private static func destroyPasscodeItems(_ pool: DatabasePool, _ device: LockStateManager, _ ledger: KeychainLedger) throws {
        try commit(pool, device, ledger) {
            try $0.execute(sql: "DELETE FROM items WHERE accessible = ?",
                           arguments: [Accessibility.whenPasscodeSetThisDeviceOnly.rawValue])
        }
    }

    /// Runs one SecItem call. Never throws: every failure is an OSStatus.
    /// `secret`: an add's data or an update's new data, read from the socket into
    /// locked memory and sealed from there; nil takes the request's `data`/`newData`.
    public func perform(_ request: KeychainRequest, secret: UnsafeRawBufferPointer? = nil) -> KeychainResponse {
        do {
            try finishPendingErase()
            let caller = try scope(of: request.app)
            switch request.operation {
            case .add: return changed(try ItemData.with(secret, or: request.data) { try add(request, data: $0, caller: caller) })
            case .find: return try find(request, caller: caller)
            case .update:
                return changed(try ItemData.with(secret, or: request.newData) { try update(request, newData: $0, caller: caller) })
            case .delete: return changed(try delete(request, caller: caller))
            }
        } catch let error as SecError {
            return KeychainResponse(status: error.status, message: error.reason)
        } catch let error as DatabaseError where error.resultCode == .SQLITE_CONSTRAINT {
            // Only the identity index can refuse a write: an update made two items alike.
            return KeychainResponse(status: SecStatus.duplicateItem, message: "the change would make two items alike")
        } catch {
            return KeychainResponse(status: SecStatus.io, message: "the item store failed: \(error)")
        }
    }

    func scope(of bundleID: String?) throws -> AccessScope {
        // The lookup holds the lock, so a registration (which clears the cache after
        // its commit) can never be overtaken by a scope read before it.
        try callers.withLock { cache in
            if let known = cache[bundleID] { return known }
            let scope = AccessScope(try entitlements(of: bundleID), keys: keys)
            cache[bundleID] = scope
            return scope
        }
    }

    /// Runs `body`, which reads with one SELECT, on a lookup connection. A statement is
    /// atomic on its own, so it takes no transaction: `pool.read`'s costs four
    /// statements more (query_only on, BEGIN, COMMIT, query_only off), each parsed anew.
    func selecting<T>(_ body: (Database) throws -> T) throws -> T {
        guard let pool = database.withLock({ $0 }) else { throw ItemStoreError("the item store \(verified.path) is not open") }
        try ensureFilesUnchanged(pool)
        return try lookups.read(body)
    }

    var crypto: ItemCrypto { ItemCrypto(device: device, keys: keys) }

    /// An item's attributes in clear, opening them unless the query already did.
    func record(of item: StoredItem) throws -> ItemRecord {
        try item.record ?? ItemRecord(opening: item, keys: keys)
    }

    /// `matching`: a find's or update's query, which may carry match terms.
    func query(_ attributes: [String: String], data: [String: Data]? = nil, text: [String: String]? = nil,
               caller: AccessScope, matching: Bool = false) throws -> ItemQuery {
        try ItemQuery(ParsedAttributes(attributes, data: data, text: text, matching: matching, isQuery: true), scope: caller,
                      passcodeSet: passcodeSet, keys: keys)
    }
    var passcodeSet: Bool { device.passcodeSet }

    func isAvailable(_ accessibility: Accessibility) -> Bool {
        device.isAvailable(accessibility.protectionClass)
    }
}
