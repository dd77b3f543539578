// SecItemUpdate: new data and/or attributes for every match, in one transaction.
// A secret is resealed when its data, identity or class changes (the additional
// data binds them); a label-only change touches no secret.
import DataProtection
import Foundation
import GRDB

extension ItemStore {
    func update(_ request: KeychainRequest, caller: AccessScope) throws -> KeychainResponse {
        try Self.checkNoResultOptions(request, "update")
        guard request.data == nil else { throw SecError(SecStatus.param, "update takes its new data as new data") }
        guard request.newData != nil || !request.updateAttributes.isEmpty else {
            throw SecError(SecStatus.param, "update needs new data or new attributes")
        }
        let query = try ItemQuery(ParsedAttributes(request.attributes), scope: caller, passcodeSet: passcodeSet)
        let changes = try ParsedAttributes(request.updateAttributes, classContext: query.itemClass)
        try checkChanges(changes, query: query, caller: caller)
        let now = Date().timeIntervalSince1970
        try commit { db in
            let matches = try query.fetch(db, withSecret: true, limitOne: false)
            guard !matches.isEmpty else { throw SecError(SecStatus.itemNotFound) }
            try checkAvailable(matches)
            for item in matches {
                try save(changing: item, changes, newData: request.newData, now: now, db)
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
        if changes.synchronizable == .any {
            throw SecError(SecStatus.param, "an item is synchronizable or not, never any")
        }
        if changes.accessible == .whenPasscodeSetThisDeviceOnly && !passcodeSet {
            throw SecError(SecStatus.notAvailable, "WhenPasscodeSetThisDeviceOnly items need a passcode")
        }
    }

    private func save(changing item: StoredItem, _ changes: ParsedAttributes, newData: Data?,
                      now: Double, _ db: Database) throws {
        guard let oldAccessibility = item.accessibility else { throw StoredItem.damaged }
        var keys = item.identity.keys
        keys.merge(changes.keys) { $1 }
        let identity = ItemIdentity(itemClass: item.identity.itemClass, given: keys,
                                    accessGroup: changes.accessGroup ?? item.identity.accessGroup,
                                    synchronizable: changes.synchronizable.map { $0 == .yes } ?? item.identity.synchronizable)
        let accessibility = changes.accessible ?? oldAccessibility
        try Self.checkSynchronizable(identity.synchronizable, accessibility)
        guard isAvailable(accessibility) else { throw ItemCrypto.unavailable(accessibility) }
        var columns = identity.columns + [("label", changes.label ?? item.label), ("accessible", accessibility.rawValue),
                                          ("modified", now)]
        if newData != nil || identity != item.identity || accessibility != oldAccessibility {
            let sealed: Data
            if let newData {
                sealed = try newData.withUnsafeBytes {
                    try crypto.seal($0, id: item.id, identity: identity, accessibility: accessibility)
                }
            } else {
                sealed = try crypto.withSecret(of: item) {
                    try crypto.seal($0, id: item.id, identity: identity, accessibility: accessibility)
                }
            }
            columns.append(("secret", sealed))
        }
        try db.execute(sql: "UPDATE items SET \(columns.map { "\"\($0.0)\" = ?" }.joined(separator: ", ")) WHERE id = ?",
                       arguments: StatementArguments(columns.map(\.1) + [item.id]))
    }
}
