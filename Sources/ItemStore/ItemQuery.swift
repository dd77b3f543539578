// A find/update/delete query turned into SQL: the attributes it names must match,
// the caller's access groups bound it, and synchronizable defaults to "no" as in
// Apple's keychain. Every query reads through the one identity index.
import GRDB

struct ItemQuery {
    let itemClass: ItemClass
    private var terms: [String] = []
    private var arguments: [any DatabaseValueConvertible] = []

    /// Throws errSecMissingEntitlement when the query names a group the caller lacks.
    init(_ attributes: ParsedAttributes, scope: AccessScope, passcodeSet: Bool) throws {
        itemClass = attributes.itemClass ?? .genp
        add("class = ?", itemClass.rawValue)
        for key in KeyAttribute.allCases {
            if let value = attributes.keys[key] {
                add("\"\(key.rawValue)\" = ?", ItemIdentity.databaseValue(key, value))
            } else if !itemClass.keyAttributes.contains(key) {
                // Always absent in this class; saying so lets SQLite use the index prefix.
                add("\"\(key.rawValue)\" = ?", ItemIdentity.databaseValue(key, key.absent))
            }
        }
        if let group = attributes.accessGroup {
            guard scope.allows(group) else {
                throw SecError(SecStatus.missingEntitlement, "the app is not entitled to access group \(group)")
            }
            add("accessGroup = ?", group)
        } else {
            let (condition, groupArguments) = scope.sqlCondition()
            terms.append(condition)
            arguments += groupArguments
        }
        switch attributes.synchronizable ?? .no {
        case .no: add("synchronizable = ?", false)
        case .yes: add("synchronizable = ?", true)
        case .any: break
        }
        if let label = attributes.label { add("label = ?", label) }
        if let accessible = attributes.accessible { add("accessible = ?", accessible.rawValue) }
        if !passcodeSet {
            // Such items are destroyed when the passcode goes; never show one meanwhile.
            add("accessible <> ?", Accessibility.whenPasscodeSetThisDeviceOnly.rawValue)
        }
    }

    private mutating func add(_ term: String, _ argument: any DatabaseValueConvertible) {
        terms.append(term)
        arguments.append(argument)
    }

    var whereClause: String { terms.joined(separator: " AND ") }
    var statementArguments: StatementArguments { StatementArguments(arguments) }

    /// Matching items in creation order; the sealed secret only when asked for.
    func fetch(_ db: Database, withSecret: Bool, limitOne: Bool) throws -> [StoredItem] {
        let sql = "SELECT \(StoredItem.columns)\(withSecret ? ", secret" : "") FROM items WHERE \(whereClause) "
            + "ORDER BY id\(limitOne ? " LIMIT 1" : "")"
        // Cached: compiling the statement costs more than running it.
        return try Row.fetchAll(db.cachedStatement(sql: sql), arguments: statementArguments).map(StoredItem.init(row:))
    }
}
