// SecItemAdd: a new item in the caller's first access group (or the one it names),
// its secret sealed under its accessibility's class key.
import DataProtection
import DPFSProtocol
import Foundation
import GRDB

extension ItemStore {
    /// `data`: the item's data (ItemData: from the caller's locked memory, else the
    /// request's). `generatedKey`: the item is a key the daemon just made
    /// (ItemStore+Keys); only such a key may name a token. `boundAccessControl`: that
    /// key's access control, bound already (its wrap binds the same enrollment).
    func add(_ request: KeychainRequest, data: UnsafeRawBufferPointer?, caller: AccessScope, generatedKey: Bool = false,
             boundAccessControl: StoredAccessControl? = nil) throws -> KeychainResponse {
        guard request.limit == nil, request.updateAttributes.isEmpty, request.updateDataAttributes == nil,
              request.updateTextAttributes == nil, request.newData == nil else {
            throw SecError(SecStatus.param, "add takes no match limit and no new attributes")
        }
        try Self.checkDataSize(count: data?.count ?? 0)
        try ItemSizeLimits.check(request.attributes, data: request.dataAttributes, text: request.textAttributes)
        let shape = try ReturnShape.parse(request.returning)
        let attributes = try ParsedAttributes(request.attributes, data: request.dataAttributes,
                                              text: request.textAttributes)
        if !generatedKey, !(attributes.keys[.tokenID] ?? "").isEmpty {
            throw SecError(SecStatus.param, "a Secure Enclave key is made by SecKeyCreateRandomKey, never added")
        }
        let group = attributes.accessGroup ?? caller.defaultGroup
        guard caller.allows(group) else {
            throw SecError(SecStatus.missingEntitlement, "the app is not entitled to access group \(group)")
        }
        let synchronizable: Bool
        switch attributes.synchronizable ?? .no {
        case .no: synchronizable = false
        case .yes: synchronizable = true
        case .any: throw SecError(SecStatus.param, "a new item is synchronizable or not, never any")
        }
        let accessibility = attributes.accessible ?? .default
        try Self.checkSynchronizable(synchronizable, accessibility)
        if accessibility == .whenPasscodeSetThisDeviceOnly && !passcodeSet {
            throw SecError(SecStatus.notAvailable, "WhenPasscodeSetThisDeviceOnly items need a passcode")
        }
        guard isAvailable(accessibility) else { throw ItemCrypto.unavailable(accessibility) }
        let identity = ItemIdentity(itemClass: attributes.itemClass ?? .genp, given: attributes.keys,
                                    accessGroup: group, synchronizable: synchronizable, dataValued: attributes.dataValued)
        let secret = data ?? UnsafeRawBufferPointer(start: nil, count: 0)
        let now = Date().timeIntervalSince1970
        try Self.checkSynchronizable(synchronizable, boundAccessControl?.flags ?? attributes.accessControl)
        let accessControl = try boundAccessControl ?? attributes.accessControl.map { try bind($0) }
        let record = ItemRecord(identity: identity, label: attributes.label, publicKey: attributes.publicKey,
                                created: now, modified: now, accessControl: accessControl,
                                descriptive: attributes.descriptive, dataValued: attributes.sealedDataValued,
                                textValued: attributes.textValued)
        let columns = RowColumns(identity, label: record.label, labelIsData: record.labelIsData,
                                 accessibility: accessibility, keys: keys)
        let id = try commit { db in
            try insert(record, columns, secret: secret, accessibility: accessibility, db)
        }
        guard let shape else { return KeychainResponse(status: SecStatus.success) }
        let returned = try BlobAttributes.replyItem(shape.includesAttributes
                                                        ? replyAttributes(of: record, id: id, accessibleName: accessibility.rawValue)
                                                        : nil,
                                                    data: shape.includesData ? Data(secret) : nil)
        return KeychainResponse(status: SecStatus.success, items: [returned])
    }

    /// An item holds at most what a backup carries and the CLI reads (64 KiB): a
    /// larger one could be kept but never leave the device.
    static func checkDataSize(_ data: Data?) throws {
        guard let data else { return }
        try checkDataSize(count: data.count)
    }

    static func checkDataSize(count: Int) throws {
        guard count > ControlProtocol.maxItemDataSize else { return }
        throw SecError(SecStatus.param, "an item's data is at most \(ControlProtocol.maxItemDataSize) bytes")
    }

    /// Inserts a new row (refusing a duplicate) and seals its attributes and secret;
    /// returns the row's id.
    @discardableResult
    func insert(_ record: ItemRecord, _ columns: RowColumns, secret: UnsafeRawBufferPointer,
                accessibility: Accessibility, _ db: Database) throws -> Int64 {
        try checkNoDuplicate(columns, db)
        let assignments = columns.assignments + [("attributes", Data()), ("secret", Data())]
        try db.execute(sql: "INSERT INTO items (\(assignments.map { "\"\($0.0)\"" }.joined(separator: ", "))) "
                           + "VALUES (\(Array(repeating: "?", count: assignments.count).joined(separator: ", ")))",
                       arguments: StatementArguments(assignments.map(\.1)))
        // The row id is part of both seals' additional data, so seal once the row exists.
        let id = db.lastInsertedRowID
        let sealed = try crypto.seal(secret, id: id, columns: columns, accessibility: accessibility)
        try db.execute(sql: "UPDATE items SET attributes = ?, secret = ? WHERE id = ?",
                       arguments: [record.seal(id: id, columns: columns, keys: keys), sealed, id])
        return id
    }

    /// An existing item with this identity is a duplicate, unless its class is
    /// unavailable: then even its existence is not the caller's to learn.
    private func checkNoDuplicate(_ row: RowColumns, _ db: Database) throws {
        let columns = row.identityColumns
        let condition = columns.map { "\"\($0.0)\" = ?" }.joined(separator: " AND ")
        guard let existing = try String.fetchOne(db, sql: "SELECT accessible FROM items WHERE \(condition)",
                                                 arguments: StatementArguments(columns.map(\.1))) else { return }
        if let accessibility = Accessibility(rawValue: existing), !isAvailable(accessibility) {
            throw ItemCrypto.unavailable(accessibility)
        }
        throw SecError(SecStatus.duplicateItem)
    }

    static func checkSynchronizable(_ synchronizable: Bool, _ accessibility: Accessibility) throws {
        if synchronizable && accessibility.isThisDeviceOnly {
            throw SecError(SecStatus.param, "a synchronizable item cannot be \(accessibility.rawValue)")
        }
    }

    /// iOS refuses an item with both (SecItem.m, SecItemAuthDoQuery): the other devices
    /// cannot ask this device's user, so a synced copy would be readable without asking.
    /// Any flag counts, as any makes Apple's access control carry constraints.
    static func checkSynchronizable(_ synchronizable: Bool, _ accessControl: AccessControlFlags?) throws {
        if synchronizable, let accessControl, !accessControl.isEmpty {
            throw SecError(SecStatus.param, "an item with an access control is not synchronizable")
        }
    }
}
