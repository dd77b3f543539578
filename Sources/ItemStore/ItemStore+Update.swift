// SecItemUpdate: new data and/or attributes for every match, in one transaction.
// The sealed attributes are always resealed (the modification date changes); the
// secret when its data or any column its seal binds (identity, label, class) changes.
import DataProtection
import DPFSProtocol
import Foundation
import GRDB

extension ItemStore {
    /// `newData`: the items' new data (ItemData: from the caller's locked memory, else
    /// the request's), if it changes.
    func update(_ request: KeychainRequest, newData: UnsafeRawBufferPointer?, caller: AccessScope) throws -> KeychainResponse {
        try Self.checkNoResultOptions(request, "update")
        guard request.data == nil else { throw SecError(SecStatus.param, "update takes its new data as new data") }
        guard newData != nil || !request.updateAttributes.isEmpty || request.updateDataAttributes != nil
                || request.updateTextAttributes != nil else {
            throw SecError(SecStatus.param, "update needs new data or new attributes")
        }
        try Self.checkDataSize(count: newData?.count ?? 0)
        try ItemSizeLimits.check(request.updateAttributes, data: request.updateDataAttributes,
                                 text: request.updateTextAttributes)
        let query = try query(request.attributes, data: request.dataAttributes, text: request.textAttributes,
                              caller: caller, matching: true)
        let changes = try ParsedAttributes(request.updateAttributes, data: request.updateDataAttributes,
                                           text: request.updateTextAttributes, classContext: query.itemClass)
        try checkChanges(changes, query: query, caller: caller)
        let now = Date().timeIntervalSince1970
        // The user is asked before the write transaction: a prompt may wait seconds.
        let asked = try selecting { try query.fetch($0, withSecret: false, limitOne: false, keys: keys) }
        try checkAvailable(asked)
        try authorize(asked, request, skipping: false)
        let askedIDs = Set(asked.map(\.id))
        try commit { db in
            let matches = try query.fetch(db, withSecret: true, limitOne: false, keys: keys)
            guard !matches.isEmpty else { throw SecError(SecStatus.itemNotFound) }
            try checkAvailable(matches)
            // An item that matched only since: no prompt inside the transaction.
            var latecomers = request
            latecomers.authentication = KeychainAuthentication(interaction: .fail, context: request.authentication?.context)
            try authorize(matches.filter { !askedIDs.contains($0.id) }, latecomers, skipping: false)
            for item in matches {
                try save(changing: item, changes, newData: newData, now: now, db)
            }
        }
        return KeychainResponse(status: SecStatus.success)
    }

    /// What can be refused before looking at any item.
    private func checkChanges(_ changes: ParsedAttributes, query: ItemQuery, caller: AccessScope) throws {
        if let itemClass = changes.itemClass, itemClass != query.itemClass {
            throw SecError(SecStatus.param, "an item's class cannot change")
        }
        if let group = changes.accessGroup, !caller.allows(group) {
            throw SecError(SecStatus.missingEntitlement, "the app is not entitled to access group \(group)")
        }
        let fixed: [KeyAttribute] = [.keyClass, .applicationLabel, .keyType, .keySizeInBits, .tokenID]
        if changes.publicKey != nil || fixed.contains(where: { changes.keys[$0] != nil }) {
            throw SecError(SecStatus.param, "a key's class, type, size, token and public key cannot change")
        }
        if changes.synchronizable == .any {
            throw SecError(SecStatus.param, "an item is synchronizable or not, never any")
        }
        // What would fail the save — flags SecAccessControlCreateWithFlags refuses, a
        // .biometryCurrentSet with nothing enrolled — fails here, so that no prompt is
        // shown (or takes an answer) for a call that cannot succeed.
        if let flags = changes.accessControl { _ = try bind(flags) }
        // Where iOS refuses it, before asking anyone; the item decides the other cases.
        try Self.checkSynchronizable(changes.synchronizable == .yes, changes.accessControl)
        if changes.accessible == .whenPasscodeSetThisDeviceOnly && !passcodeSet {
            throw SecError(SecStatus.notAvailable, "WhenPasscodeSetThisDeviceOnly items need a passcode")
        }
    }

    private func save(changing item: StoredItem, _ changes: ParsedAttributes, newData: UnsafeRawBufferPointer?,
                      now: Double, _ db: Database) throws {
        guard let oldAccessibility = item.accessibility else { throw StoredItem.damaged }
        let old = try record(of: item)
        if newData != nil, old.identity.keys[.tokenID] == SecureEnclaveKeys.tokenID {
            throw SecError(SecStatus.param, "a Secure Enclave key's data is the daemon's own")
        }
        // A Secure Enclave key's access control is sealed with its wrapped scalar: it
        // cannot be added, changed or dropped, nor the accessibility it carries.
        if old.identity.keys[.tokenID] == SecureEnclaveKeys.tokenID,
           changes.accessControl != nil || (old.accessControl != nil && changes.accessible != nil) {
            throw SecError(SecStatus.param, "a Secure Enclave key's access control is sealed with the key")
        }
        var given = old.identity.keys
        given.merge(changes.keys) { $1 }
        // A changed attribute takes the type it is given now.
        let dataValued = old.identity.dataValued.subtracting(changes.keys.keys).union(changes.dataValued)
        let identity = ItemIdentity(itemClass: old.identity.itemClass, given: given,
                                    accessGroup: changes.accessGroup ?? old.identity.accessGroup,
                                    synchronizable: changes.synchronizable.map { $0 == .yes } ?? old.identity.synchronizable,
                                    dataValued: dataValued)
        let accessibility = changes.accessible ?? oldAccessibility
        try Self.checkSynchronizable(identity.synchronizable, accessibility)
        guard isAvailable(accessibility) else { throw ItemCrypto.unavailable(accessibility) }
        // Only an update that makes the pair: an item that is both already keeps taking
        // other changes, and "synchronizable": "no".
        if changes.synchronizable == .yes || changes.accessControl != nil {
            try Self.checkSynchronizable(identity.synchronizable, changes.accessControl ?? old.accessControl?.flags)
        }
        let accessControl = try changes.accessControl.map { try bind($0) } ?? old.accessControl
        let changedSealed = Set(changes.descriptive.keys.map(\.rawValue) + (changes.label == nil ? [] : ["label"]))
        let record = ItemRecord(identity: identity, label: changes.label ?? old.label, publicKey: old.publicKey,
                                created: old.created, modified: now, accessControl: accessControl,
                                descriptive: old.descriptive.merging(changes.descriptive) { $1 },
                                dataValued: old.dataValued.subtracting(changedSealed).union(changes.sealedDataValued),
                                textValued: old.textValued.subtracting(changedSealed).union(changes.textValued))
        let columns = RowColumns(identity, label: record.label, labelIsData: record.labelIsData,
                                 accessibility: accessibility, keys: keys)
        var assignments = columns.assignments + [("attributes", record.seal(id: item.id, columns: columns, keys: keys))]
        if newData != nil || columns != item.columns {
            let sealed: Data
            if let newData {
                sealed = try crypto.seal(newData, id: item.id, columns: columns, accessibility: accessibility)
            } else {
                sealed = try crypto.withSecret(of: item) {
                    try crypto.seal($0, id: item.id, columns: columns, accessibility: accessibility)
                }
            }
            assignments.append(("secret", sealed))
        }
        try db.execute(sql: "UPDATE items SET \(assignments.map { "\"\($0.0)\" = ?" }.joined(separator: ", ")) WHERE id = ?",
                       arguments: StatementArguments(assignments.map(\.1) + [item.id]))
    }
}
