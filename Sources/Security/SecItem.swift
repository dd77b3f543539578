// SecItemAdd, SecItemCopyMatching, SecItemUpdate, SecItemDelete with Apple's
// signatures. Each translates its dictionaries, sends one keychain request to the
// daemon of the mount in DPFS_MOUNT as the app in DPFS_APP, and answers the store's
// OSStatus. No semantics live here: the daemon's item store decides every outcome.
// Each is @discardableResult, as Apple's C functions are when Swift imports them.
import DPFSProtocol
import Foundation

/// Adds an item; with kSecReturnData/Attributes/PersistentRef, `result` receives it.
@discardableResult
public func SecItemAdd(_ attributes: CFDictionary, _ result: UnsafeMutablePointer<CFTypeRef?>?) -> OSStatus {
    SecItemCall.run(.add, attributes, changes: nil, result: result)
}

/// Finds the first match (or every match with kSecMatchLimitAll) and returns what the
/// kSecReturn keys ask for in `result`.
@discardableResult
public func SecItemCopyMatching(_ query: CFDictionary, _ result: UnsafeMutablePointer<CFTypeRef?>?) -> OSStatus {
    SecItemCall.run(.find, query, changes: nil, result: result)
}

/// Changes the attributes and/or data (kSecValueData) of every match.
@discardableResult
public func SecItemUpdate(_ query: CFDictionary, _ attributesToUpdate: CFDictionary) -> OSStatus {
    SecItemCall.run(.update, query, changes: attributesToUpdate, result: nil)
}

/// Removes every match.
@discardableResult
public func SecItemDelete(_ query: CFDictionary) -> OSStatus {
    SecItemCall.run(.delete, query, changes: nil, result: nil)
}

enum SecItemCall {
    static func run(_ operation: KeychainRequest.Operation, _ dictionary: [String: Any],
                    changes: [String: Any]?, result: UnsafeMutablePointer<CFTypeRef?>?) -> OSStatus {
        var query: SecItemQuery
        let update: SecItemQuery?
        do {
            query = try SecItemQuery(dictionary, role: .query)
            update = try changes.map { try SecItemQuery($0, role: .changes) }
            // securityd's errSecItemMatchUnsupported, which is errSecParam.
            if operation == .add || operation == .delete, !query.matchTerms.isEmpty { return errSecParam }
            try query.applyMatchTerms()
            if operation == .add, let key = query.valueRef {
                query.valueData = try KeyItemAttributes.forAdding(key, &query.attributes)
            } else if operation == .add, query.attributes["class"] == kSecClassKey {
                try KeyItemAttributes.forAdding(data: query.valueData, &query.attributes)
            }
        } catch let refusal as SecItemRefusal {
            return refusal.namesEmptyClass && operation != .add ? errSecItemNotFound : refusal.status
        } catch {
            return errSecParam
        }
        // Apple's securityd reads kSecValueData of a query only when adding: a wrapper
        // that deletes with the dictionary it adds with must not fail for it.
        var request = KeychainRequest(
            operation: operation, attributes: query.attributes, data: operation == .add ? query.valueData : nil,
            updateAttributes: update?.attributes ?? [:], newData: update?.valueData,
            limit: query.limit, returning: operation == .find ? (query.returning ?? "attributes") : query.returning)
        request.authentication = query.authentication?.request
        if !query.dataAttributes.isEmpty { request.dataAttributes = query.dataAttributes }
        if let changed = update?.dataAttributes, !changed.isEmpty { request.updateDataAttributes = changed }
        if !query.textAttributes.isEmpty { request.textAttributes = query.textAttributes }
        if let changed = update?.textAttributes, !changed.isEmpty { request.updateTextAttributes = changed }
        let response: KeychainResponse
        switch DeviceConnection.shared.send(request) {
        case .answered(let answer): response = answer
        case .unreachable: return errSecNotAvailable
        // Far over what an item may hold (64 KiB, which the store refuses as errSecParam).
        case .tooLarge: return errSecParam
        }
        if response.status == errSecSuccess, let result {
            do {
                result.pointee = try SecItemResult.object(for: response, query)
            } catch {
                return (error as? SecItemRefusal)?.status ?? errSecDecode
            }
        }
        return response.status
    }
}
