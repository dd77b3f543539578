// SecItemCopyMatching: the first match, or every match with limit all. A secret is
// decrypted only for items whose data is returned; an unavailable class fails the
// call even for attributes, as on iOS.
import DataProtection
import Foundation

extension ItemStore {
    func find(_ request: KeychainRequest, caller: AccessScope) throws -> KeychainResponse {
        guard request.data == nil, request.updateAttributes.isEmpty, request.newData == nil else {
            throw SecError(SecStatus.param, "find takes no data and no new attributes")
        }
        let limit = try MatchLimit.parse(request.limit, default: .one)
        let shape = try ReturnShape.parse(request.returning) ?? .data
        let query = try query(request.attributes, data: request.dataAttributes, text: request.textAttributes,
                              caller: caller, matching: true)
        var fetched = FindReplyBudget(shape: shape)
        // Under kSecUseAuthenticationUISkip the first match may be left out, and the
        // one returned is then the first of those that are not: every match is read.
        let skipsFirst = limit == .one && shape.includesData && request.authentication?.interaction == .skip
        var matches = try selecting {
            try query.fetch($0, withSecret: shape.includesData, limitOne: limit == .one && !skipsFirst, keys: keys) {
                if !skipsFirst { try fetched.admit($0) }
            }
        }
        guard !matches.isEmpty else { throw SecError(SecStatus.itemNotFound) }
        // Only the match returned must be available, as when it was the only one read.
        if !skipsFirst { try checkAvailable(matches) }
        if shape.includesData {
            // Records the reply reads too (attributes; a key's, for its token): each
            // opened once, the check reading it.
            matches = try matches.map { item in
                shape.includesAttributes || item.columns.itemClass == .keys ? try opened(item) : item
            }
            matches = try authorize(matches, request, skipping: true)
            guard !matches.isEmpty else { throw SecError(SecStatus.itemNotFound) }
            if skipsFirst {
                matches = Array(matches.prefix(1))
                try checkAvailable(matches)
            }
        }
        var built = FindReplyBudget(shape: shape)
        var items: [KeychainResponse.Item] = []
        items.reserveCapacity(matches.count)
        for item in matches {
            let replied = try BlobAttributes.replyItem(shape.includesAttributes
                                                           ? replyAttributes(of: try record(of: item), id: item.id,
                                                                             accessibleName: item.columns.accessibleName)
                                                           : nil,
                                                       data: shape.includesData ? try replyData(for: item) : nil)
            try built.take(replied)
            items.append(replied)
        }
        return KeychainResponse(status: SecStatus.success, items: items)
    }

    private func opened(_ item: StoredItem) throws -> StoredItem {
        var item = item
        item.record = try record(of: item)
        return item
    }

    /// Fails with errSecInteractionNotAllowed if any item's class is unavailable,
    /// before anything is decrypted or changed.
    func checkAvailable(_ items: [StoredItem]) throws {
        for item in items {
            guard let accessibility = item.accessibility else { throw StoredItem.damaged }
            guard isAvailable(accessibility) else { throw ItemCrypto.unavailable(accessibility) }
        }
    }
}
