// A find/update/delete query turned into SQL: the attributes it names must match
// (compared as keyed hashes, ItemKeys; the sealed ones, descriptive attributes and
// the access control, in the opened record), the caller's access groups bound it, and
// synchronizable defaults to "no" as in Apple's keychain. Every query reads through
// the one identity index.
import DPFSProtocol
import Foundation
import GRDB

struct ItemQuery {
    let itemClass: ItemClass
    /// Which terms the WHERE clause has; its text follows from them (QueryText).
    private var shape = QueryShape()
    private var arguments: [SQLArgument] = []
    /// Set when the caller holds wildcard groups: a `TEAMID.*` cannot be compared with
    /// a hash, so rows outside the exact groups are kept only once their sealed
    /// access group is opened and allowed.
    private var wildcardScope: AccessScope?
    private var exactGroupHashes: Set<Data> = []
    /// Descriptive attributes the query names: compared in the opened record, so a
    /// query naming any cannot take SQL's limit either.
    private let descriptiveTerms: [DescriptiveAttribute: Data]
    /// kSecAttrAccessControl's flags when the query names them, compared in the opened
    /// record as descriptive terms are: only an item stored with these very flags
    /// matches, never one without an access control.
    private let accessControlTerm: AccessControlFlags?
    /// kSecMatchHostOrSubdomainOfHost: the server, compared in the opened record.
    private let hostTerm: String?
    /// Whether a row must be opened to tell if it matches.
    private var comparesSealedTerms: Bool { !descriptiveTerms.isEmpty || accessControlTerm != nil || hostTerm != nil }

    /// Throws errSecMissingEntitlement when the query names a group the caller lacks.
    init(_ attributes: ParsedAttributes, scope: AccessScope, passcodeSet: Bool, keys: ItemKeys) throws {
        itemClass = attributes.itemClass ?? .genp
        descriptiveTerms = attributes.descriptive.keys.reduce(into: [:]) { $0[$1] = attributes.descriptiveBytes($1) }
        accessControlTerm = attributes.accessControl
        hostTerm = attributes.hostOrSubdomainOf
        add(.itemClass, .text(itemClass.rawValue))
        for key in KeyAttribute.allCases {
            if let value = attributes.keys[key] {
                let hash = attributes.dataValued.contains(key)
                    ? Data(hexString: value).map { keys.keyHash(key, bytes: $0) } ?? keys.keyHash(key, value)
                    : keys.keyHash(key, value)
                add(.key(key), .blob(hash))
            } else if !itemClass.keyAttributes.contains(key) {
                // Always absent in this class; saying so lets SQLite use the index prefix.
                add(.key(key), .blob(keys.keyHash(key, key.absent)))
            }
        }
        if let group = attributes.accessGroup {
            guard scope.allows(group) else {
                throw SecError(SecStatus.missingEntitlement, "the app is not entitled to access group \(group)")
            }
            add(.accessGroup, .blob(keys.attributeHash("accessGroup", group)))
        } else if scope.prefixes.isEmpty {
            let hashes = scope.exactHashes(keys)
            shape.add(.accessGroupIn)
            shape.groupCount = hashes.count
            arguments += hashes.map(SQLArgument.blob)
        } else {
            wildcardScope = scope
            exactGroupHashes = Set(scope.exactHashes(keys))
        }
        // A ref names one item, synchronizable or not, as on iOS.
        switch attributes.synchronizable ?? (attributes.persistentRef == nil ? .no : .any) {
        case .no: add(.synchronizable, .integer(0))
        case .yes: add(.synchronizable, .integer(1))
        case .any: break
        }
        if let label = attributes.label {
            let isData = attributes.sealedDataValued.contains("label")
            add(.label, .blob(keys.attributeHash("label", bytes: BlobAttributes.bytes(label, hex: isData))))
        }
        if let accessible = attributes.accessible { add(.accessible, .text(accessible.rawValue)) }
        if !passcodeSet {
            // Such items are destroyed when the passcode goes; never show one meanwhile.
            add(.notAccessible, .text(Accessibility.whenPasscodeSetThisDeviceOnly.rawValue))
        }
        if let reference = attributes.persistentRef {
            // Besides the other terms: a ref reaches its item only where the query
            // without it could, so it opens nothing of another app's.
            guard let id = keys.itemID(of: reference, itemClass: itemClass) else {
                throw SecError(SecStatus.itemNotFound)
            }
            add(.rowID, .integer(id))
        }
    }

    private mutating func add(_ term: QueryTerm, _ argument: SQLArgument) {
        shape.add(term)
        arguments.append(argument)
    }

    /// The arguments as GRDB binds them, for an EXPLAIN QUERY PLAN of the query.
    var statementArguments: StatementArguments { StatementArguments(arguments.map(\.databaseValue)) }

    /// The SELECT that `fetch` runs. A wildcard scope and sealed terms (descriptive,
    /// access control) filter after reading, so their limit cannot be SQL's.
    func sql(withSecret: Bool, limitOne: Bool) -> String {
        var shape = shape
        shape.withSecret = withSecret
        shape.limitOne = limitOne && wildcardScope == nil && !comparesSealedTerms
        return QueryText.select(shape)
    }

    /// Matching items in creation order; the sealed secret only when asked for.
    /// Under a wildcard scope, a row outside the exact groups whose attributes fail
    /// to open is errSecDecode: whether it is the caller's cannot be told; so is any
    /// candidate's under sealed terms. `admit` sees each match as it is kept, and may
    /// end the fetch by throwing.
    func fetch(_ db: Database, withSecret: Bool, limitOne: Bool, keys: ItemKeys,
               admit: (StoredItem) throws -> Void = { _ in }) throws -> [StoredItem] {
        // Cached: compiling the statement costs more than running it.
        let statement = try db.cachedStatement(sql: sql(withSecret: withSecret, limitOne: limitOne))
        var items: [StoredItem] = []
        try StatementRows.rows(of: statement, arguments) { row in
            var item = try StoredItem(row: row)
            item.keepDigest(keys)
            if let scope = wildcardScope, !exactGroupHashes.contains(item.columns.groupHash) {
                let record = try ItemRecord(opening: item, keys: keys)
                guard scope.allows(record.identity.accessGroup) else { return true }
                item.record = record
            }
            if comparesSealedTerms {
                let record = try item.record ?? ItemRecord(opening: item, keys: keys)
                guard matchesSealedTerms(record) else { return true }
                item.record = record
            }
            try admit(item)
            items.append(item)
            return !limitOne
        }
        return items
    }

    private func matchesSealedTerms(_ record: ItemRecord) -> Bool {
        if let accessControlTerm, record.accessControl?.flags != accessControlTerm { return false }
        if let hostTerm,
           !Self.isHostOrSubdomain(String(decoding: record.identity.bytes(of: .server), as: UTF8.self), of: hostTerm) {
            return false
        }
        return descriptiveTerms.allSatisfy { record.descriptiveBytes($0.key) == $0.value }
    }

    /// As iOS compares them: exactly, or with "." and the host as the server's suffix.
    static func isHostOrSubdomain(_ server: String, of host: String) -> Bool {
        server == host || server.hasSuffix("." + host)
    }
}
