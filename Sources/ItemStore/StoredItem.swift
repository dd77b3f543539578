// One row of the `items` table as the store reasons about it, and its attributes as a
// keychain call returns them. Rows are read defensively: a damaged row becomes an
// errSecDecode for that item, never a crash.
import Foundation
import GRDB

/// Apple's uniqueness key of an item.
struct ItemIdentity: Equatable, Sendable {
    var itemClass: ItemClass
    /// Every key attribute of the class, absent ones as `KeyAttribute.absent`.
    var keys: [KeyAttribute: String]
    var accessGroup: String
    var synchronizable: Bool

    init(itemClass: ItemClass, given: [KeyAttribute: String], accessGroup: String, synchronizable: Bool) {
        self.itemClass = itemClass
        var keys: [KeyAttribute: String] = [:]
        for key in itemClass.keyAttributes { keys[key] = given[key] ?? key.absent }
        self.keys = keys
        self.accessGroup = accessGroup
        self.synchronizable = synchronizable
    }

    /// Column names and values for INSERT/UPDATE and for equality lookups; the other
    /// class's attributes keep their absent value so the unique index sees them.
    var columns: [(String, any DatabaseValueConvertible)] {
        var columns: [(String, any DatabaseValueConvertible)] = [("class", itemClass.rawValue)]
        for key in KeyAttribute.allCases {
            columns.append((key.rawValue, Self.databaseValue(key, keys[key] ?? key.absent)))
        }
        columns.append(("accessGroup", accessGroup))
        columns.append(("synchronizable", synchronizable))
        return columns
    }

    static func databaseValue(_ key: KeyAttribute, _ value: String) -> any DatabaseValueConvertible {
        key == .port ? (Int(value) ?? 0) : value
    }
}

struct StoredItem: Sendable {
    static let columns = "id, class, service, server, account, protocol, port, path, securityDomain, "
        + "authenticationType, accessGroup, synchronizable, label, accessible, created, modified"

    var id: Int64
    var identity: ItemIdentity
    var label: String?
    /// Raw, so that a damaged value is reported when the item is touched.
    var accessibleName: String
    var created: Double
    var modified: Double
    /// Loaded only when the call needs the secret.
    var secret: Data?

    var accessibility: Accessibility? { Accessibility(rawValue: accessibleName) }

    init(id: Int64, identity: ItemIdentity, label: String?, accessibility: Accessibility,
         created: Double, modified: Double, secret: Data?) {
        self.id = id; self.identity = identity; self.label = label
        self.accessibleName = accessibility.rawValue
        self.created = created; self.modified = modified; self.secret = secret
    }

    init(row: Row) throws {
        func text(_ column: String) throws -> String {
            guard let value = String.fromDatabaseValue(row[column]) else { throw Self.damaged }
            return value
        }
        guard let id = Int64.fromDatabaseValue(row["id"]),
              let itemClass = ItemClass(rawValue: try text("class")),
              let synchronizable = Bool.fromDatabaseValue(row["synchronizable"]),
              let created = Double.fromDatabaseValue(row["created"]),
              let modified = Double.fromDatabaseValue(row["modified"]) else { throw Self.damaged }
        var keys: [KeyAttribute: String] = [:]
        for key in itemClass.keyAttributes {
            if key == .port {
                guard let port = Int.fromDatabaseValue(row[key.rawValue]) else { throw Self.damaged }
                keys[key] = String(port)
            } else {
                keys[key] = try text(key.rawValue)
            }
        }
        self.id = id
        self.identity = ItemIdentity(itemClass: itemClass, given: keys, accessGroup: try text("accessGroup"),
                                     synchronizable: synchronizable)
        self.label = String.fromDatabaseValue(row["label"])
        self.accessibleName = try text("accessible")
        self.created = created
        self.modified = modified
        self.secret = row.hasColumn("secret") ? Data.fromDatabaseValue(row["secret"]) : nil
    }

    static let damaged = SecError(SecStatus.decode, "a keychain item is damaged")

    private static let dateStyle = Date.ISO8601FormatStyle(includingFractionalSeconds: true)

    /// The attributes a find returns, by the same names a request uses.
    var attributes: [String: String] {
        var attributes: [String: String] = [
            "class": identity.itemClass.rawValue,
            "accessGroup": identity.accessGroup,
            "accessible": accessibleName,
            "synchronizable": identity.synchronizable ? "yes" : "no",
            "creationDate": Self.dateStyle.format(Date(timeIntervalSince1970: created)),
            "modificationDate": Self.dateStyle.format(Date(timeIntervalSince1970: modified)),
        ]
        for (key, value) in identity.keys { attributes[key.rawValue] = value }
        if let label { attributes["label"] = label }
        return attributes
    }
}
