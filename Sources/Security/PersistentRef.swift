// kSecReturnPersistentRef / kSecValuePersistentRef: an opaque Data that names one item
// for the item's life, as on iOS, where it names the item's row: it finds the item
// after any update of its attributes, data or access group, and after a restart. The
// item store makes it (DPFSProtocol's PersistentReference) and resolves it under the
// caller's access groups, as any query. It holds no secret.
//
// A ref of dpfs before it ("dpfsref1") carried the item's identity attributes; it is
// still read, as the query of those attributes, so a ref stored then finds its item as
// long as the item keeps that identity.
import DPFSProtocol
import Foundation

enum PersistentRef {
    /// What a ref adds to a query: its terms, and the class the query asks for when
    /// it names none.
    struct Terms {
        var attributes: [String: String]
        var itemClass: String?
    }

    /// The ref a store reply carries.
    static func make(from storeAttributes: [String: String]) -> Data? {
        storeAttributes[PersistentReference.attributeName].flatMap(PersistentReference.init(hex:)).map { Data($0.bytes) }
    }

    /// Nil for bytes that are no ref.
    static func terms(of ref: Data) -> Terms? {
        if let reference = PersistentReference(ref) {
            return Terms(attributes: [PersistentReference.attributeName: reference.hex], itemClass: reference.itemClass)
        }
        return identityTerms(of: ref).map { Terms(attributes: $0, itemClass: nil) }
    }

    private static let identityMagic = Data("dpfsref1".utf8)
    /// The store's attributes an identity ref carried.
    private static let identityNames: Set<String> = [
        "class", "service", "account", "server", "protocol", "port", "path", "securityDomain",
        "authenticationType", "accessGroup", "synchronizable",
        "keyClass", "applicationLabel", "applicationTag", "keyType", "keySizeInBits", "tokenID",
    ]

    private static func identityTerms(of ref: Data) -> [String: String]? {
        guard ref.starts(with: identityMagic),
              let identity = try? JSONDecoder().decode([String: String].self, from: ref.dropFirst(identityMagic.count)),
              identity.keys.allSatisfy(identityNames.contains) else { return nil }
        return identity
    }
}
