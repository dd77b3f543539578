// One row of the `items` table as the store reasons about it. A row holds in clear
// only what the semantics need before any key is used (class, synchronizable,
// accessibility); every attribute a query can name is a keyed hash (ItemKeys), and
// the attributes themselves are sealed (ItemRecord). Rows are read defensively: a
// damaged row becomes an errSecDecode for that item, never a crash.
import DPFSProtocol
import Foundation
import GRDB

/// Apple's uniqueness key of an item, in clear (in memory only).
struct ItemIdentity: Equatable, Sendable {
    var itemClass: ItemClass
    /// Every key attribute of the class, absent ones as `KeyAttribute.absent`.
    var keys: [KeyAttribute: String]
    var accessGroup: String
    var synchronizable: Bool
    /// The key attributes given as Data, their `keys` value the bytes in hex (BlobAttributes).
    var dataValued: Set<KeyAttribute>

    init(itemClass: ItemClass, given: [KeyAttribute: String], accessGroup: String, synchronizable: Bool,
         dataValued: Set<KeyAttribute> = []) {
        self.itemClass = itemClass
        var keys: [KeyAttribute: String] = [:]
        for key in itemClass.keyAttributes { keys[key] = given[key] ?? key.absent }
        self.keys = keys
        self.accessGroup = accessGroup
        self.synchronizable = synchronizable
        self.dataValued = dataValued.filter { given[$0] != nil && itemClass.keyAttributes.contains($0) }
    }

    /// The keyed hash of a key attribute's value, by its bytes.
    func hash(_ key: KeyAttribute, _ keys: ItemKeys) -> Data {
        let value = self.keys[key] ?? key.absent
        if dataValued.contains(key), let bytes = Data(hexString: value) { return keys.keyHash(key, bytes: bytes) }
        return keys.keyHash(key, value)
    }

    /// The value's bytes: the text's, or those given as Data.
    func bytes(of key: KeyAttribute) -> Data {
        let value = keys[key] ?? key.absent
        if dataValued.contains(key), let bytes = Data(hexString: value) { return bytes }
        return Data(value.utf8)
    }
}

/// The clear and hashed columns of a row: what queries compare and what the row
/// digest, bound into both seals, covers.
struct RowColumns: Equatable, Sendable {
    var itemClass: ItemClass
    var synchronizable: Bool
    var accessibleName: String
    /// Keyed hashes of every key attribute (KeyAttribute order; the other class's
    /// attributes hash their absent value, so the unique index sees them), then of
    /// the access group.
    var hashes: [Data]
    /// Keyed hash of the label, nil when the item has none.
    var labelHash: Data?

    static let hashedColumns = KeyAttribute.allCases.map(\.rawValue) + ["accessGroup"]
    static var groupIndex: Int { hashedColumns.count - 1 }

    /// `labelIsData`: the label is bytes in hex, given as Data, and hashed by its bytes.
    init(_ identity: ItemIdentity, label: String?, labelIsData: Bool, accessibility: Accessibility, keys: ItemKeys) {
        itemClass = identity.itemClass
        synchronizable = identity.synchronizable
        accessibleName = accessibility.rawValue
        hashes = KeyAttribute.allCases.map { identity.hash($0, keys) }
            + [keys.attributeHash("accessGroup", identity.accessGroup)]
        labelHash = label.map { keys.attributeHash("label", bytes: BlobAttributes.bytes($0, hex: labelIsData)) }
    }

    /// Read by position (StoredItem.Position): a lookup by name lowercases and hashes
    /// the name, for every column of every row.
    init(row: some ColumnReader) throws {
        typealias At = StoredItem.Position
        do {
            guard let itemClass = ItemClass(rawValue: try row.text(at: At.itemClass)) else { throw StoredItem.damaged }
            var hashes: [Data] = []
            hashes.reserveCapacity(Self.hashedColumns.count)
            for index in At.hashes { hashes.append(try row.blob(at: index)) }
            let label = try row.optionalBlob(at: At.label)
            // Only a true hash, so that no stored value encodes like "no label" in the digest.
            guard label.map({ $0.count == ItemKeys.hashSize }) ?? true else { throw StoredItem.damaged }
            self.itemClass = itemClass
            self.synchronizable = try row.integer(at: At.synchronizable) != 0
            self.accessibleName = try row.text(at: At.accessible)
            self.hashes = hashes
            self.labelHash = label
        } catch is ColumnMismatch {
            throw StoredItem.damaged
        }
    }

    var groupHash: Data { hashes[Self.groupIndex] }

    /// The identity part: what the unique index and the duplicate check compare.
    var identityColumns: [(String, any DatabaseValueConvertible)] {
        [("class", itemClass.rawValue)] + zip(Self.hashedColumns, hashes).map { ($0, $1) }
            + [("synchronizable", synchronizable)]
    }

    /// Every column but id and the two seals, for INSERT and UPDATE.
    var assignments: [(String, any DatabaseValueConvertible)] {
        identityColumns + [("label", labelHash), ("accessible", accessibleName)]
    }

    /// BLAKE2b-128 under the index key of every column above (length-prefixed,
    /// dpfs(5)); both seals bind it, so editing, or copying in from another row, any
    /// clear or hashed column breaks them.
    func digest(_ keys: ItemKeys) -> Data {
        var fields = FieldList()
        fields.append("dpfs.keychain.row.v2")
        fields.append(itemClass.rawValue)
        fields.append(synchronizable ? "sync" : "local")
        fields.append(accessibleName)
        for hash in hashes { fields.append(hash) }
        // A label hash is never empty (init(row:)), so an empty field means no label.
        fields.append(labelHash ?? Data())
        return keys.hash(fields.bytes)
    }
}

struct StoredItem: Sendable {
    /// In the order of `Position`.
    static let columns = "id, class, " + RowColumns.hashedColumns.map { "\"\($0)\"" }.joined(separator: ", ")
        + ", synchronizable, label, accessible, attributes"

    var id: Int64
    let columns: RowColumns
    /// The digest of `columns`, once a step of the call computed it: a find opens
    /// both seals, which bind it.
    private var columnsDigest: Data?
    var sealedAttributes: Data
    /// Loaded only when the call needs the secret.
    var secret: Data?
    /// The opened attributes, once a step of the call needed them.
    var record: ItemRecord?

    var accessibility: Accessibility? { Accessibility(rawValue: columns.accessibleName) }

    /// RowColumns.digest of the item's columns.
    func digest(_ keys: ItemKeys) -> Data { columnsDigest ?? columns.digest(keys) }

    /// Computes the digest once for the steps to come.
    mutating func keepDigest(_ keys: ItemKeys) { columnsDigest = columns.digest(keys) }

    init(id: Int64, columns: RowColumns, sealedAttributes: Data, record: ItemRecord?) {
        self.id = id; self.columns = columns; self.sealedAttributes = sealedAttributes; self.record = record
    }

    /// Where each of `columns` is in a row that selects them.
    enum Position {
        static let id = 0
        static let itemClass = 1
        static let hashes = 2..<(2 + RowColumns.hashedColumns.count)
        static let synchronizable = hashes.upperBound
        static let label = synchronizable + 1
        static let accessible = label + 1
        static let attributes = accessible + 1
        /// Selected after `columns` when the call needs it.
        static let secret = attributes + 1
    }

    /// A row that starts with `columns`, the secret after them when it was selected.
    init(row: some ColumnReader) throws {
        do {
            id = try row.integer(at: Position.id)
            sealedAttributes = try row.blob(at: Position.attributes)
            secret = row.columnCount > Position.secret ? try row.optionalBlob(at: Position.secret) : nil
        } catch is ColumnMismatch {
            throw Self.damaged
        }
        columns = try RowColumns(row: row)
    }

    static let damaged = SecError(SecStatus.decode, "a keychain item is damaged")

    private static let dateStyle = Date.ISO8601FormatStyle(includingFractionalSeconds: true)

    /// The attributes a find returns, by the same names a request uses.
    static func attributes(of record: ItemRecord, accessibleName: String) -> [String: String] {
        let identity = record.identity
        var attributes: [String: String] = [
            "class": identity.itemClass.rawValue,
            "accessGroup": identity.accessGroup,
            "accessible": accessibleName,
            "synchronizable": identity.synchronizable ? "yes" : "no",
            "creationDate": dateStyle.format(Date(timeIntervalSince1970: record.created)),
            "modificationDate": dateStyle.format(Date(timeIntervalSince1970: record.modified)),
        ]
        for (key, value) in identity.keys { attributes[key.rawValue] = value }
        if !record.allDataValued.isEmpty { attributes[BlobAttributes.marker] = BlobAttributes.list(record.allDataValued) }
        if !record.textValued.isEmpty { attributes[BlobAttributes.textMarker] = BlobAttributes.list(record.textValued) }
        if let label = record.label { attributes["label"] = label }
        if let accessControl = record.accessControl { attributes["accessControl"] = String(accessControl.flags.rawValue) }
        if let publicKey = record.publicKey { attributes["publicKey"] = publicKey }
        for (attribute, value) in record.descriptive { attributes[attribute.rawValue] = value }
        return attributes
    }
}
