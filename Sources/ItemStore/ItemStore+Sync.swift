// What keychain sync (module KeychainSync) needs of the store, and nothing else: the
// synchronizable items' identities and modification dates, an item in full to send,
// and a received item or deletion written in place. Received changes go through the
// same sealed rows and generation as an app's calls; only the app-facing checks
// (entitlements, duplicate refusal) are not the caller's here.
import DataProtection
import DPFSProtocol
import Foundation
import GRDB
import Synchronization

/// A synchronizable item's identity, as the bytes keychain sync hashes into a record
/// id, and when it last changed.
public struct SyncItemVersion: Sendable {
    public let identity: [UInt8]
    public let modified: Double
}

/// A synchronizable item in full: attributes by the names requests use (`class`, the
/// key attributes, `accessGroup`, `label`, the descriptive attributes, `accessible`,
/// `created`, `modified`), and its secret in locked memory.
public struct SyncedItem: Sendable {
    public var attributes: [String: String]
    public var secret: SecureBuffer

    public init(attributes: [String: String], secret: SecureBuffer) {
        self.attributes = attributes; self.secret = secret
    }

    public var modified: Double { attributes["modified"].flatMap(Double.init) ?? 0 }
}

/// Called after every add, update and delete an app makes (not after sync's own writes).
public final class KeychainChangeObservers: Sendable {
    private let handlers = Mutex<[@Sendable () -> Void]>([])

    public func add(_ handler: @escaping @Sendable () -> Void) { handlers.withLock { $0.append(handler) } }

    func notify() { for handler in handlers.withLock({ $0 }) { handler() } }
}

extension SyncedItem {
    /// The most an item's attributes and data can take, every value at its longest: the
    /// key and descriptive attributes, and `class`, `accessGroup`, `accessible`,
    /// `label`, `accessControl`, `publicKey`, `created`, `modified`, each with its name
    /// and two length prefixes (ItemSizeLimits), then its data. A sync record larger
    /// than this and its seal was made by no dpfs (KeychainSync refuses it unread).
    public static let maxEncodedSize = (KeyAttribute.allCases.count + DescriptiveAttribute.allCases.count + 8)
        * (ControlProtocol.maxAttributeSize + 64) + ControlProtocol.maxItemDataSize + 64
}

extension ItemStore {
    /// Every synchronizable item's identity and modification date (no secret opened).
    /// A damaged item is left out: it cannot be sent (holdsSynchronizable still finds it).
    public func synchronizableVersions() throws -> [SyncItemVersion] {
        try pool.read { db in
            let rows = try Row.fetchAll(db, sql: "SELECT \(StoredItem.columns) FROM items WHERE synchronizable = 1")
            return rows.compactMap { row in
                guard let record = try? ItemRecord(opening: try StoredItem(row: row), keys: keys) else { return nil }
                return SyncItemVersion(identity: Self.syncIdentity(record.identity), modified: record.modified)
            }
        }
    }

    /// Whether an item with this identity is stored, damaged or not.
    public func holdsSynchronizable(identity: [UInt8]) throws -> Bool {
        guard let identityValue = Self.identity(fromSync: identity) else { return false }
        return try pool.read { db in try storedItem(identityValue, withSecret: false, db) != nil }
    }

    /// The item with this identity in full, nil when there is none; errSecInteraction-
    /// NotAllowed (a SecError) while its class key is unavailable.
    public func synchronizedItem(identity: [UInt8]) throws -> SyncedItem? {
        guard let identityValue = Self.identity(fromSync: identity) else { return nil }
        return try pool.read { db -> SyncedItem? in
            guard let item = try storedItem(identityValue, withSecret: true, db) else { return nil }
            let record = try self.record(of: item)
            guard let accessibility = item.accessibility, let sealed = item.secret,
                  sealed.count >= AEAD.overhead else { throw StoredItem.damaged }
            let secret = SecureBuffer(count: sealed.count - AEAD.overhead)
            try crypto.withSecret(of: item) { secret.mutableBytes.copyMemory(from: $0) }
            var attributes = StoredItem.attributes(of: record, accessibleName: accessibility.rawValue)
            attributes["created"] = String(record.created)
            attributes["modified"] = String(record.modified)
            attributes["creationDate"] = nil
            attributes["modificationDate"] = nil
            attributes["synchronizable"] = nil
            return SyncedItem(attributes: attributes, secret: secret)
        }
    }

    /// The sync identity of a received item's attributes, nil when they are not an item.
    public static func syncIdentity(of attributes: [String: String]) -> [UInt8]? {
        guard let identity = try? identity(of: attributes) else { return nil }
        return syncIdentity(identity)
    }

    /// Writes a received item: replaces the item with its identity or adds it, with the
    /// sender's dates, and notes `receivedVersion` in the same transaction (nil: the caller
    /// keeps no state that could miss it). errSecInteractionNotAllowed while its class
    /// key is unavailable. `keepsLocal` is asked under the writer's lock with the stored
    /// item's modification date (nil: there is none): true leaves the store as it is (an
    /// app wrote or deleted the item after sync last looked), and the call returns false.
    @discardableResult
    public func applySynchronized(_ item: SyncedItem, noting receivedVersion: ReceivedSyncVersion? = nil,
                                  unlessLocal keepsLocal: (Double?) -> Bool = { _ in false }) throws -> Bool {
        let identity = try Self.identity(of: item.attributes)
        guard let accessibility = item.attributes["accessible"].flatMap(Accessibility.init(rawValue:)),
              !accessibility.isThisDeviceOnly,
              let created = item.attributes["created"].flatMap(Double.init),
              let modified = item.attributes["modified"].flatMap(Double.init) else {
            throw SecError(SecStatus.decode, "a synchronized item's attributes are incomplete")
        }
        guard isAvailable(accessibility) else { throw ItemCrypto.unavailable(accessibility) }
        let label = item.attributes["label"]
        let descriptive = try DescriptiveAttribute.values(in: item.attributes, of: identity.itemClass)
        guard let dataValued = BlobAttributes.parse(item.attributes[BlobAttributes.marker]),
              let textValued = BlobAttributes.parse(item.attributes[BlobAttributes.textMarker],
                                                    allowed: BlobAttributes.textNames) else {
            throw SecError(SecStatus.decode, "a synchronized item names unknown data attributes")
        }
        let received = try Self.receivedAccessControl(item.attributes)
        var publicKey: String?
        if identity.itemClass == .keys {
            publicKey = ReceivedKeyPublicKey.of(item.secret, keyClass: identity.keys[.keyClass]) ?? item.attributes["publicKey"]
        }
        let record = ItemRecord(identity: identity, label: label, publicKey: publicKey, created: created, modified: modified,
                                accessControl: received, descriptive: descriptive, dataValued: dataValued,
                                textValued: textValued)
        let columns = RowColumns(identity, label: label, labelIsData: record.labelIsData, accessibility: accessibility,
                                 keys: keys)
        if try keepsStored(identity, keepsLocal) { return false }
        return try commit { db in
            let id: Int64
            var stored = record
            if let existing = try storedItem(identity, withSecret: false, db) {
                if let local = try? self.record(of: existing), keepsLocal(local.modified) { return false }
                id = existing.id
                // A record never takes an access control away, nor changes one. A damaged
                // item's is unreadable, like the rest of it: the received version replaces it.
                if let local = try? self.record(of: existing).accessControl { stored.accessControl = local }
                try db.execute(sql: "UPDATE items SET \(columns.assignments.map { "\"\($0.0)\" = ?" }.joined(separator: ", ")) WHERE id = ?",
                               arguments: StatementArguments(columns.assignments.map(\.1) + [id]))
            } else {
                if keepsLocal(nil) { return false }
                let assignments = columns.assignments + [("attributes", Data()), ("secret", Data())]
                try db.execute(sql: "INSERT INTO items (\(assignments.map { "\"\($0.0)\"" }.joined(separator: ", "))) "
                                   + "VALUES (\(Array(repeating: "?", count: assignments.count).joined(separator: ", ")))",
                               arguments: StatementArguments(assignments.map(\.1)))
                id = db.lastInsertedRowID
            }
            let sealed = try crypto.seal(item.secret.bytes, id: id, columns: columns, accessibility: accessibility)
            try db.execute(sql: "UPDATE items SET attributes = ?, secret = ? WHERE id = ?",
                           arguments: [stored.seal(id: id, columns: columns, keys: keys), sealed, id])
            if let receivedVersion { try note(receivedVersion, db) }
            return true
        }
    }

    /// The access control a received record carries: only an item that is already
    /// synchronizable with one has it, and its copies keep asking. Bound to no
    /// enrollment, as the sender's is not this device's, a .biometryCurrentSet copy
    /// never opens here (fails closed).
    private static func receivedAccessControl(_ attributes: [String: String]) throws -> StoredAccessControl? {
        guard let raw = attributes["accessControl"] else { return nil }
        guard let flags = UInt(raw).map(AccessControlFlags.init(rawValue:)), flags.unsupported == nil else {
            throw SecError(SecStatus.decode, "a synchronized item's access control is unreadable")
        }
        return flags.isEmpty ? nil : StoredAccessControl(flags: flags, boundDomain: nil)
    }

    /// Removes the synchronizable item with this identity (a received deletion); none is
    /// fine. `keepsLocal` as for applySynchronized: true keeps the item. Notes
    /// `receivedVersion` in the same transaction when the deletion is applied. Returns
    /// whether the store changed (sync counts its own writes against the generation).
    @discardableResult
    public func removeSynchronized(identity: [UInt8], noting receivedVersion: ReceivedSyncVersion? = nil,
                                   unlessLocal keepsLocal: (Double?) -> Bool = { _ in false }) throws -> Bool {
        guard let identityValue = Self.identity(fromSync: identity) else { return false }
        if try keepsStored(identityValue, keepsLocal) { return false }
        return try commit { db in
            var changed = false
            if let existing = try storedItem(identityValue, withSecret: false, db) {
                if let local = try? self.record(of: existing), keepsLocal(local.modified) { return false }
                try db.execute(sql: "DELETE FROM items WHERE id = ?", arguments: [existing.id])
                changed = true
            }
            if let receivedVersion {
                try note(receivedVersion, db)
                changed = true
            }
            return changed
        }
    }

    /// Whether `keepsLocal` keeps the stored item as it is now, asked before the write
    /// (and again under the writer's lock): a kept item costs no commit, which would
    /// move the generation and make sync scan every item again for nothing.
    private func keepsStored(_ identity: ItemIdentity, _ keepsLocal: (Double?) -> Bool) throws -> Bool {
        try pool.read { db in
            guard let existing = try storedItem(identity, withSecret: false, db) else { return keepsLocal(nil) }
            guard let local = try? self.record(of: existing) else { return false }
            return keepsLocal(local.modified)
        }
    }

    private func storedItem(_ identity: ItemIdentity, withSecret: Bool, _ db: Database) throws -> StoredItem? {
        let columns = RowColumns(identity, label: nil, labelIsData: false, accessibility: .always, keys: keys).identityColumns
        let condition = columns.map { "\"\($0.0)\" = ?" }.joined(separator: " AND ")
        let selected = StoredItem.columns + (withSecret ? ", secret" : "")
        guard let row = try Row.fetchOne(db, sql: "SELECT \(selected) FROM items WHERE \(condition)",
                                         arguments: StatementArguments(columns.map(\.1))) else { return nil }
        return try StoredItem(row: row)
    }

    /// The length-prefixed identity fields: a version tag, the class, each key
    /// attribute's name and value (its bytes, as the hashes compare it) in the class's
    /// order, the access group.
    static func syncIdentity(_ identity: ItemIdentity) -> [UInt8] {
        var fields: [[UInt8]] = [Array("dpfs.sync.identity.v1".utf8), Array(identity.itemClass.rawValue.utf8)]
        for key in identity.itemClass.keyAttributes {
            fields += [Array(key.rawValue.utf8), Array(identity.bytes(of: key))]
        }
        fields.append(Array(identity.accessGroup.utf8))
        return FieldEncoding.lengthPrefixed(fields)
    }

    static func identity(fromSync bytes: [UInt8]) -> ItemIdentity? {
        guard let fields = bytes.withUnsafeBytes(FieldEncoding.fields), fields.count >= 3,
              String(decoding: fields[0], as: UTF8.self) == "dpfs.sync.identity.v1",
              let itemClass = ItemClass(rawValue: String(decoding: fields[1], as: UTF8.self)),
              fields.count == 3 + 2 * itemClass.keyAttributes.count else { return nil }
        var keys: [KeyAttribute: String] = [:]
        var dataValued: Set<KeyAttribute> = []
        for (index, key) in itemClass.keyAttributes.enumerated() {
            guard String(decoding: fields[2 + 2 * index], as: UTF8.self) == key.rawValue else { return nil }
            let value = fields[3 + 2 * index]
            // Looked up by its hash, which is the same for text and bytes: bytes that
            // are no text are kept as bytes.
            if let text = String(validating: value, as: UTF8.self) {
                keys[key] = text
            } else {
                keys[key] = Data(value).hexString
                dataValued.insert(key)
            }
        }
        return ItemIdentity(itemClass: itemClass, given: keys,
                            accessGroup: String(decoding: fields[fields.count - 1], as: UTF8.self), synchronizable: true,
                            dataValued: dataValued)
    }

    private static func identity(of attributes: [String: String]) throws -> ItemIdentity {
        guard let itemClass = attributes["class"].flatMap(ItemClass.init(rawValue:)),
              let group = attributes["accessGroup"] else {
            throw SecError(SecStatus.decode, "a synchronized item has no class or access group")
        }
        var keys: [KeyAttribute: String] = [:]
        for key in itemClass.keyAttributes { keys[key] = attributes[key.rawValue] }
        guard let dataValued = BlobAttributes.parse(attributes[BlobAttributes.marker]) else {
            throw SecError(SecStatus.decode, "a synchronized item names unknown data attributes")
        }
        return ItemIdentity(itemClass: itemClass, given: keys, accessGroup: group, synchronizable: true,
                            dataValued: Set(dataValued.compactMap(KeyAttribute.init(rawValue:))))
    }
}

extension ItemStore {
    /// A successful write's reply, after telling the change observers.
    func changed(_ response: KeychainResponse) -> KeychainResponse {
        if response.status == SecStatus.success { changeObservers.notify() }
        return response
    }
}

extension ItemStore {
    /// Whether a sync call failed only because the item's class key is not in memory now.
    public static func isUnavailable(_ error: any Error) -> Bool {
        (error as? SecError)?.status == SecStatus.interactionNotAllowed
    }
}
