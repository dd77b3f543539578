// A keychain wrapper of the kind iOS apps carry: string passwords by account under
// one service, optionally in a shared access group.
import Foundation
import Security

public enum KeychainError: Error, Equatable {
    case itemNotFound
    case duplicateItem
    case unexpectedData
    case unhandled(OSStatus)

    init(status: OSStatus) {
        switch status {
        case errSecItemNotFound: self = .itemNotFound
        case errSecDuplicateItem: self = .duplicateItem
        default: self = .unhandled(status)
        }
    }
}

public struct KeychainWrapper {
    public let service: String
    public let accessGroup: String?

    public init(service: String, accessGroup: String? = nil) {
        self.service = service
        self.accessGroup = accessGroup
    }

    private func query(account: String? = nil) -> [String: Any] {
        var query: [String: Any] = [
            kSecClass as String: kSecClassGenericPassword,
            kSecAttrService as String: service,
            kSecUseDataProtectionKeychain as String: true,
        ]
        if let account { query[kSecAttrAccount as String] = account }
        if let accessGroup { query[kSecAttrAccessGroup as String] = accessGroup }
        return query
    }

    public func save(_ password: String, account: String,
                     accessible: CFString = kSecAttrAccessibleWhenUnlocked) throws {
        var item = query(account: account)
        item[kSecValueData as String] = password.data(using: .utf8)
        item[kSecAttrAccessible as String] = accessible
        let status = SecItemAdd(item as CFDictionary, nil)
        guard status == errSecSuccess else { throw KeychainError(status: status) }
    }

    public func load(account: String) throws -> String {
        var query = query(account: account)
        query[kSecMatchLimit as String] = kSecMatchLimitOne
        query[kSecReturnData as String] = kCFBooleanTrue
        var result: AnyObject?
        let status = withUnsafeMutablePointer(to: &result) {
            SecItemCopyMatching(query as CFDictionary, UnsafeMutablePointer($0))
        }
        guard status == noErr else { throw KeychainError(status: status) }
        guard let data = result as? Data, let password = String(data: data, encoding: .utf8) else {
            throw KeychainError.unexpectedData
        }
        return password
    }

    public func update(_ password: String, account: String) throws {
        let attributes: [String: Any] = [kSecValueData as String: Data(password.utf8)]
        let status = SecItemUpdate(query(account: account) as CFDictionary, attributes as CFDictionary)
        guard status == errSecSuccess else { throw KeychainError(status: status) }
    }

    /// Saves, or replaces what is there.
    public func set(_ password: String, account: String) throws {
        do {
            try save(password, account: account)
        } catch KeychainError.duplicateItem {
            try update(password, account: account)
        }
    }

    public func delete(account: String) throws {
        let status = SecItemDelete(query(account: account) as CFDictionary)
        guard status == errSecSuccess || status == errSecItemNotFound else { throw KeychainError(status: status) }
    }

    public func accounts() throws -> [String] {
        var query = query()
        query[kSecMatchLimit as String] = kSecMatchLimitAll
        query[kSecReturnAttributes as String] = true
        var result: CFTypeRef?
        let status = SecItemCopyMatching(query as CFDictionary, &result)
        if status == errSecItemNotFound { return [] }
        guard status == errSecSuccess else { throw KeychainError(status: status) }
        guard let items = result as? [[String: Any]] else { throw KeychainError.unexpectedData }
        return items.compactMap { $0[kSecAttrAccount as String] as? String }.sorted()
    }

    /// Apple's explanation of a status, for logs.
    public static func message(for status: OSStatus) -> String {
        (SecCopyErrorMessageString(status, nil) as String?) ?? "OSStatus \(status)"
    }
}
