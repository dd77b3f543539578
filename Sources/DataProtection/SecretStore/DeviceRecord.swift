// The device's record in its secret store (dpfs(5)): the generations of the
// keybag and of the item store, the failed-attempt count and the simulated user's
// enrollment digest. The device directory
// cannot vouch for itself — an older copy of it is internally consistent — so the
// authority on "how new" and "how many failures" lives where the device secret lives.
import Foundation
import Glibc
import Synchronization

public struct DeviceRecord: Codable, Sendable, Equatable {
    public var keybagGeneration = 0
    public var keychainGeneration = 0
    /// The digest of the item store's whole state at `keychainGeneration`
    /// (KeychainState); nil in a record made before digests were kept.
    public var keychainDigest: String?
    /// The state before the last write, recorded with it: the write is recorded before
    /// its commit, so a crash in between leaves the database there.
    public var keychainPrevious: KeychainState?
    public var failedAttempts = 0
    public var erased = false
    /// BLAKE2b-128, in hex, of biometry.json as last written (nil until the first
    /// enrollment): an older copy of the file put back, with an enrollment since
    /// replaced, does not hash to it.
    public var biometryDigest: String?

    public init() {}

    /// The item-store state the record vouches for now, if it keeps a digest.
    public var keychainState: KeychainState? {
        keychainDigest.map { KeychainState(generation: keychainGeneration, digest: $0) }
    }
}

/// The item store's whole state as the secret store records it: its generation and a
/// digest of every row of every table (ItemStore+Generation). A database put back from
/// an older copy, with its counter edited or a deleted row inserted again, does not
/// hash to it.
public struct KeychainState: Codable, Sendable, Equatable {
    public var generation: Int
    /// BLAKE2b-128 of the store's rows, in hex.
    public var digest: String

    public init(generation: Int, digest: String) {
        self.generation = generation
        self.digest = digest
    }
}

public enum DeviceRecordError: Error, CustomStringConvertible, Equatable {
    /// `what` is "keybag" or "keychain".
    case rolledBack(what: String, store: String, found: Int, recorded: Int)
    /// The item store is at the recorded generation (or past it) but its rows are not
    /// the ones recorded: an old copy with its counter raised, rows put back, or a byte
    /// of a row changed on disk (which SQLite's integrity check does not see).
    case keychainAltered(store: String, found: Int, recorded: Int)
    case unreadable(store: String, device: String, reason: String)

    public var description: String {
        switch self {
        case .rolledBack(let what, let store, let found, let recorded):
            return "the \(what) is older than the device's record in secret store \(store) "
                + "(generation \(found) < \(recorded)): an old copy was put back"
        case .keychainAltered(let store, let found, let recorded):
            return "the keychain does not match the device's record in secret store \(store) "
                + "(generation \(found), recorded \(recorded), other items): it was put back from an older copy, edited or damaged"
        case .unreadable(let store, let device, let reason):
            return "the record of device \(device) in secret store \(store) cannot be used: \(reason)"
        }
    }
}

/// Reads and updates a device's record. Every read-modify-write goes through `serial`
/// within a process, so a keybag save and a keychain commit never lose each other's
/// update, and holds the record's file lock across processes (RecordFileLock), so
/// two copies of the device directory in use at once do not either.
public enum DeviceRecordStore {
    private static let serial = Mutex<Void>(())

    /// The record, or nil when the store has none yet (a device made before records existed).
    public static func load(for deviceUUID: String, in location: SecretStoreLocation) throws -> DeviceRecord? {
        try serial.withLock { _ in try read(deviceUUID, location) }
    }

    /// Applies `change` to the stored record (an empty one when there is none) and
    /// writes it crash-atomically; returns the record written.
    @discardableResult
    public static func update(for deviceUUID: String, in location: SecretStoreLocation,
                              _ change: (inout DeviceRecord) throws -> Void) throws -> DeviceRecord {
        try serial.withLock { _ in
            try RecordFileLock.holding(RecordFileLock.path(of: deviceUUID, in: location), store: location, device: deviceUUID) {
                var record = try read(deviceUUID, location) ?? DeviceRecord()
                let before = record
                try change(&record)
                if record != before { try write(record, deviceUUID, location) }
                return record
            }
        }
    }

    private static func read(_ deviceUUID: String, _ location: SecretStoreLocation) throws -> DeviceRecord? {
        let bytes: [UInt8]
        switch location {
        case .file(let directory):
            let path = statePath(of: deviceUUID, in: directory)
            guard access(path, F_OK) == 0 else { return nil }
            do { bytes = try AtomicFile.read(path) } catch {
                throw DeviceRecordError.unreadable(store: location.description, device: deviceUUID, reason: "\(error)")
            }
        case .tpm2(let tcti):
            do {
                guard let stored = try TPMSecretStore.readRecord(for: deviceUUID, tcti: tcti) else { return nil }
                bytes = stored
            } catch {
                throw DeviceRecordError.unreadable(store: location.description, device: deviceUUID, reason: "\(error)")
            }
        }
        do {
            return try JSONDecoder().decode(DeviceRecord.self, from: Data(bytes))
        } catch {
            throw DeviceRecordError.unreadable(store: location.description, device: deviceUUID,
                                               reason: "it is not a device record")
        }
    }

    private static func write(_ record: DeviceRecord, _ deviceUUID: String, _ location: SecretStoreLocation) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        let bytes = [UInt8](try encoder.encode(record))
        switch location {
        case .file(let directory):
            try AtomicFile.write(bytes, to: statePath(of: deviceUUID, in: directory), mode: 0o600)
        case .tpm2(let tcti):
            try TPMSecretStore.writeRecord(bytes, for: deviceUUID, tcti: tcti)
        }
    }

    /// Removes the stale temporaries of the device's record in a file store (the
    /// record's, AtomicFile.removeStaleTemporaries), under the record's lock, which
    /// every write of it holds: copies of the device directory share the record.
    @discardableResult
    public static func removeStaleTemporaries(for deviceUUID: String, in location: SecretStoreLocation,
                                              openedAt: timespec) throws -> [String] {
        guard case .file(let directory) = location else { return [] }
        return try serial.withLock { _ in
            try RecordFileLock.holding(RecordFileLock.path(of: deviceUUID, in: location), store: location, device: deviceUUID) {
                AtomicFile.removeStaleTemporaries(of: statePath(of: deviceUUID, in: directory), openedAt: openedAt)
            }
        }
    }

    public static func statePath(of deviceUUID: String, in directory: String) -> String {
        directory + "/" + deviceUUID + ".state"
    }
}
