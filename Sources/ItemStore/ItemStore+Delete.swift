// SecItemDelete: removes every match, in one transaction; nothing is removed when a
// match's class is unavailable.
import DPFSProtocol
import Foundation
import GRDB

extension ItemStore {
    func delete(_ request: KeychainRequest, caller: AccessScope) throws -> KeychainResponse {
        try Self.checkNoResultOptions(request, "delete")
        guard request.data == nil, request.updateAttributes.isEmpty, request.updateDataAttributes == nil,
              request.updateTextAttributes == nil, request.newData == nil else {
            throw SecError(SecStatus.param, "delete takes no data and no new attributes")
        }
        let query = try query(request.attributes, data: request.dataAttributes, text: request.textAttributes,
                              caller: caller)
        try commit { db in
            let matches = try query.fetch(db, withSecret: false, limitOne: false, keys: keys)
            guard !matches.isEmpty else { throw SecError(SecStatus.itemNotFound) }
            // A row whose accessibility is damaged may still go: deleting is how one recovers.
            for item in matches {
                if let accessibility = item.accessibility, !isAvailable(accessibility) {
                    throw ItemCrypto.unavailable(accessibility)
                }
            }
            // By id: under a wildcard scope the query's SQL matches more than the caller's rows.
            let statement = try db.cachedStatement(sql: "DELETE FROM items WHERE id = ?")
            for item in matches { try statement.execute(arguments: [item.id]) }
        }
        return KeychainResponse(status: SecStatus.success)
    }

    /// Update and delete act on every match and return nothing.
    static func checkNoResultOptions(_ request: KeychainRequest, _ operation: String) throws {
        guard request.returning == nil else { throw SecError(SecStatus.param, "\(operation) returns nothing") }
        guard request.limit == nil || request.limit == "all" else {
            throw SecError(SecStatus.param, "\(operation) acts on every match; its only limit is all")
        }
    }
}
