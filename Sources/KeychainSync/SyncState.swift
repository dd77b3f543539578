// A member device's sync state, `sync.json` in the device directory (dpfs(5)), written
// atomically. The account key, the id key and the device's X25519 private key are
// sealed under the untilFirstAuth class key, so sync runs from the first unlock on, as
// iCloud Keychain does. Each entry names a record by its id and holds the version this
// device last agreed with the server (or made and has still to push); the item's
// identity in it is sealed under the id key.
import DPFSProtocol
import DataProtection
import Foundation

/// A record the pull did not fetch: its sequence and its payload's size in bytes.
struct RefusedRecord: Codable, Equatable {
    var sequence: Int
    var size: Int
}

struct SyncState: Codable, Equatable {
    struct Entry: Codable, Equatable {
        var modified: Double
        var deleted: Bool
        /// The device that made this version (ties of `modified` go to the greater id).
        var writer: String
        /// Made here and not yet on the server.
        var pending: Bool
        /// The item's identity, sealed under the id key (hex).
        var identity: String
        /// The server's sequence of the record as this device last saw it there (pulled
        /// or pushed): a server that holds it lower, or not at all, was put back.
        var sequence: Int?
    }

    var accountID: String
    /// The server as `sync status` shows it, without any secret of the string.
    var server: String
    /// The whole string when it holds a secret (a password, an SSL key's passphrase),
    /// sealed under the untilFirstAuth class key (hex): a copy of the device directory
    /// does not give the server's password away.
    var sealedServer: String?
    var deviceID: String
    var epoch: Int
    /// Account key ‖ id key, sealed under the untilFirstAuth class key (hex).
    var sealedKeys: String
    var sealedPrivateKey: String
    var publicKey: String
    /// The greatest server sequence this device has pulled.
    var lastSequence: Int
    var entries: [String: Entry]
    /// The account's members as last seen while no rotation was due: a rotation made
    /// here wraps the new key to these only, so that a member row added after a leave
    /// (by the device that left, which still knows the old key) gets nothing.
    var roster: [String]?
    /// Records pulled from the server that do not open with this device's keys, or name
    /// no item under its id key, by record id, at the sequence pulled: while there are
    /// any, status says so rather than "connected".
    var unreadable: [String: Int]?
    /// Records pulled from the server whose payload is larger than any record's, so
    /// never fetched, by record id: while there are any, status names them.
    var refused: [String: RefusedRecord]?

    /// Notes a record pulled at `sequence` as unreadable, or (nil) as read.
    mutating func markUnreadable(_ recordID: String, at sequence: Int?) {
        var records = unreadable ?? [:]
        records[recordID] = sequence
        unreadable = records.isEmpty ? nil : records
    }

    /// Keeps the unreadable records for which `stillHeld(recordID, sequence)` is true.
    mutating func forgetUnreadable(unless stillHeld: (String, Int) -> Bool) {
        let kept = (unreadable ?? [:]).filter { stillHeld($0.key, $0.value) }
        unreadable = kept.isEmpty ? nil : kept
    }

    /// Notes a record pulled as refused for its size, or (nil) as no longer refused.
    mutating func markRefused(_ recordID: String, _ record: RefusedRecord?) {
        var records = refused ?? [:]
        records[recordID] = record
        refused = records.isEmpty ? nil : records
    }

    /// Keeps the refused records for which `stillHeld(recordID, sequence)` is true.
    mutating func forgetRefused(unless stillHeld: (String, Int) -> Bool) {
        let kept = (refused ?? [:]).filter { stillHeld($0.key, $0.value.sequence) }
        refused = kept.isEmpty ? nil : kept
    }

    static func path(in directory: DeviceDirectory) -> String { directory.syncStatePath }

    static func load(from directory: DeviceDirectory) throws -> SyncState? {
        let path = path(in: directory)
        guard FileManager.default.fileExists(atPath: path) else { return nil }
        do {
            return try JSONDecoder().decode(SyncState.self, from: Data(try AtomicFile.read(path)))
        } catch {
            throw SyncError("the sync state \(path) is damaged: \(error)")
        }
    }

    func save(in directory: DeviceDirectory) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        try AtomicFile.write(Array(try encoder.encode(self)), to: Self.path(in: directory))
    }

    static func remove(from directory: DeviceDirectory) throws {
        let path = path(in: directory)
        guard unlink(path) == 0 || errno == ENOENT else { throw SystemError("unlink", path) }
        try AtomicFile.syncDirectory(of: path)
    }

    // MARK: sealing under the device's class key

    static func localAD(_ purpose: String, accountID: String) -> [UInt8] {
        LengthPrefixed.encode(["dpfs.sync.local.v1", purpose, accountID])
    }

    /// Seals `secret` under the untilFirstAuth class key; nil before the first unlock.
    static func seal(_ secret: SecureBuffer, purpose: String, accountID: String, device: LockStateManager) -> String? {
        device.withClassKey(.untilFirstAuth) { key in
            Hex.encode(AEAD.seal(secret, additionalData: localAD(purpose, accountID: accountID), key: key))
        }
    }

    static func open(_ sealed: String, purpose: String, accountID: String, device: LockStateManager) throws -> SecureBuffer? {
        guard let bytes = Hex.decode(sealed) else { throw SyncError("the sync state's \(purpose) is damaged") }
        let opened: SecureBuffer?? = device.withClassKey(.untilFirstAuth) { key in
            AEAD.open(bytes, additionalData: localAD(purpose, accountID: accountID), key: key)
        }
        guard let opened else { return nil }
        guard let opened else { throw SyncError.stateDoesNotOpen(purpose) }
        return opened
    }

    func crypto(device: LockStateManager) throws -> AccountCrypto? {
        guard let keys = try Self.open(sealedKeys, purpose: "account-keys", accountID: accountID, device: device) else { return nil }
        guard let crypto = AccountCrypto(accountID: accountID, epoch: epoch, keyPair: keys) else {
            throw SyncError("the sync state's account keys are damaged")
        }
        return crypto
    }

    // MARK: the server

    /// `server`, as the user gave it, in the form the state keeps: `server` without
    /// secrets, and the whole string sealed when it has any. Nil before the first unlock.
    static func keeping(server: String, accountID: String, device: LockStateManager) throws
        -> (shown: String, sealed: String?)? {
        let parsed = try ConnectionString(server)
        guard parsed.hasSecret else { return (server, nil) }
        var text = server
        let secret = text.withUTF8 { SecureBuffer(copying: UnsafeRawBufferPointer($0)) }
        guard let sealed = seal(secret, purpose: "server", accountID: accountID, device: device) else { return nil }
        return (parsed.displayed, sealed)
    }

    /// The server to connect to; nil before the first unlock when its string is sealed.
    func connectionString(device: LockStateManager) throws -> ConnectionString? {
        guard let sealedServer else { return try ConnectionString(server) }
        guard let opened = try Self.open(sealedServer, purpose: "server", accountID: accountID, device: device) else {
            return nil
        }
        return try withExtendedLifetime(opened) { try ConnectionString(String(decoding: opened.bytes, as: UTF8.self)) }
    }

    /// A state written before servers were sealed keeps the password in `server`: seals
    /// it now (after the first unlock; before, it stays as it is).
    mutating func sealServerIfClear(device: LockStateManager) throws {
        guard sealedServer == nil, (try? ConnectionString(server))?.hasSecret == true,
              let kept = try Self.keeping(server: server, accountID: accountID, device: device) else { return }
        (server, sealedServer) = (kept.shown, kept.sealed)
    }

    /// An identity sealed for an entry, bound to its record id.
    static func sealIdentity(_ identity: [UInt8], recordID: String, crypto: AccountCrypto) -> String {
        let secret = identity.withUnsafeBytes { SecureBuffer(copying: $0) }
        return Hex.encode(AEAD.seal(secret, additionalData: LengthPrefixed.encode(["dpfs.sync.entry.v1", recordID]),
                                    key: crypto.idKey))
    }

    static func openIdentity(_ sealed: String, recordID: String, crypto: AccountCrypto) -> [UInt8]? {
        guard let bytes = Hex.decode(sealed),
              let opened = AEAD.open(bytes, additionalData: LengthPrefixed.encode(["dpfs.sync.entry.v1", recordID]),
                                     key: crypto.idKey) else { return nil }
        return withExtendedLifetime(opened) { Array(opened.bytes) }
    }
}
