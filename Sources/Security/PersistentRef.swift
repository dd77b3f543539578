// kSecReturnPersistentRef / kSecValuePersistentRef: an opaque Data that names one item
// and finds it again later, as on iOS. Here it carries the item's identity (class,
// key attributes, access group, synchronizable) in the store's own names, so a query
// holding it is an ordinary attribute query. It holds no secret.
import Foundation

enum PersistentRef {
    private static let magic = Data("dpfsref1".utf8)
    /// The store's returned attributes that make up an item's identity.
    private static let identityNames: Set<String> = [
        "class", "service", "account", "server", "protocol", "port", "path", "securityDomain",
        "authenticationType", "accessGroup", "synchronizable",
        "keyClass", "applicationLabel", "applicationTag", "keyType", "keySizeInBits", "tokenID",
    ]

    static func make(from storeAttributes: [String: String]) -> Data? {
        let identity = storeAttributes.filter { identityNames.contains($0.key) }
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        guard let body = try? encoder.encode(identity) else { return nil }
        return magic + body
    }

    static func attributes(of ref: Data) -> [String: String]? {
        guard ref.starts(with: magic),
              let identity = try? JSONDecoder().decode([String: String].self, from: ref.dropFirst(magic.count)),
              identity.keys.allSatisfy(identityNames.contains) else { return nil }
        return identity
    }
}
