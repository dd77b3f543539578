// The SELECT text of an ItemQuery, made once per shape and kept. A query's text
// follows from which terms it has, never from their values (those are bound), and
// the shapes that calls make are few; building the text and hashing it anew cost a
// find more than its SQLite step did.
import DPFSProtocol

/// A term of a query's WHERE clause. Their bits follow the order in which ItemQuery
/// adds terms, so that a shape's text lists them in the order of the query's
/// arguments.
enum QueryTerm: Equatable {
    case itemClass
    case key(KeyAttribute)
    case accessGroup
    /// `accessGroup IN (…)`, with as many places as the shape's groupCount.
    case accessGroupIn
    case synchronizable, label, accessible
    /// Leaves out items that live only while a passcode is set.
    case notAccessible
    /// The one row a persistent reference names.
    case rowID

    var bit: Int {
        switch self {
        case .itemClass: 0
        case .key(let key): 1 + key.position
        case .accessGroup: 1 + KeyAttribute.allCases.count
        case .accessGroupIn: 2 + KeyAttribute.allCases.count
        case .synchronizable: 3 + KeyAttribute.allCases.count
        case .label: 4 + KeyAttribute.allCases.count
        case .accessible: 5 + KeyAttribute.allCases.count
        case .notAccessible: 6 + KeyAttribute.allCases.count
        case .rowID: 7 + KeyAttribute.allCases.count
        }
    }

    static let all: [QueryTerm] = [.itemClass] + KeyAttribute.allCases.map { .key($0) }
        + [.accessGroup, .accessGroupIn, .synchronizable, .label, .accessible, .notAccessible, .rowID]

    func text(groupCount: Int) -> String {
        switch self {
        case .itemClass: "class = ?"
        case .key(let key): "\"\(key.rawValue)\" = ?"
        case .accessGroup: "accessGroup = ?"
        case .accessGroupIn: "accessGroup IN (" + Array(repeating: "?", count: groupCount).joined(separator: ",") + ")"
        case .synchronizable: "synchronizable = ?"
        case .label: "label = ?"
        case .accessible: "accessible = ?"
        case .notAccessible: "accessible <> ?"
        case .rowID: "id = ?"
        }
    }
}

/// What a query's text depends on.
struct QueryShape: Hashable {
    private(set) var terms: UInt32 = 0
    var groupCount = 0
    var withSecret = false
    var limitOne = false

    /// Terms come in QueryTerm's order, each once.
    mutating func add(_ term: QueryTerm) {
        assert(terms >> term.bit == 0, "query terms added out of order")
        terms |= 1 << term.bit
    }

    func has(_ term: QueryTerm) -> Bool { terms & (1 << term.bit) != 0 }
}

enum QueryText {
    /// More shapes than calls make in practice; past it, texts are made and not kept.
    private static let capacity = 512
    private static let kept = PosixMutex<[QueryShape: String]>([:])

    static func select(_ shape: QueryShape) -> String {
        if let text = kept.withLock({ $0[shape] }) { return text }
        let text = make(shape)
        kept.withLock { texts in
            if texts.count < capacity { texts[shape] = text }
        }
        return text
    }

    private static func make(_ shape: QueryShape) -> String {
        let clause = QueryTerm.all.filter(shape.has).map { $0.text(groupCount: shape.groupCount) }.joined(separator: " AND ")
        return "SELECT \(StoredItem.columns)\(shape.withSecret ? ", secret" : "") FROM items WHERE \(clause) "
            + "ORDER BY id\(shape.limitOne ? " LIMIT 1" : "")"
    }
}
