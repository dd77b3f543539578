// How large a stored item's attributes may be, and a find's reply. Every item the store
// takes must come back in a reply (one frame, ControlProtocol.maxBodySize): each of its
// attribute values has a limit, as its data has (checkDataSize). A find of many items
// may still not fit: it is refused with errSecAllocate, before the daemon has read and
// opened every match when what it has read already cannot fit, else as soon as the
// reply it builds outgrows one.
import DataProtection
import DPFSProtocol
import Foundation

enum ItemSizeLimits {
    /// errSecParam unless every value of `attributes`, as they are to be stored, is
    /// within the limit.
    /// Values given as bytes (`data`), and text kept as bytes (`text`), are stored in
    /// hex: twice their size.
    static func check(_ attributes: [String: String], data: [String: Data]? = nil, text: [String: String]? = nil) throws {
        let sizes = attributes.map { ($0.key, $0.value.utf8.count) } + (data ?? [:]).map { ($0.key, 2 * $0.value.count) }
            + (text ?? [:]).map { ($0.key, 2 * $0.value.utf8.count) }
        for (name, size) in sizes where size > ControlProtocol.maxAttributeSize {
            throw SecError(SecStatus.param, "\(name) is \(size) bytes long as stored; an attribute value holds "
                               + "at most \(ControlProtocol.maxAttributeSize)")
        }
    }

    static var replyTooLarge: SecError {
        SecError(SecStatus.allocate, "the matching items would not fit in one reply (at most "
                     + "\(KeychainResponse.maxItemsSize) bytes); narrow the query, or ask for one item or for attributes only")
    }
}

/// A find's reply as its items are counted: first at least what each fetched row will
/// take (`admit`), to stop reading rows once that is too much; then exactly what each
/// item built takes (`take`).
struct FindReplyBudget {
    let shape: ReturnShape
    private var left = KeychainResponse.maxItemsSize

    init(shape: ReturnShape) { self.shape = shape }

    /// errSecAllocate once the rows admitted take more, at least, than a reply holds.
    mutating func admit(_ item: StoredItem) throws {
        left -= Self.leastReplySize(of: item, shape: shape)
        if left < 0 { throw ItemSizeLimits.replyTooLarge }
    }

    /// errSecAllocate once the items taken take more than a reply holds.
    mutating func take(_ item: KeychainResponse.Item) throws {
        left -= item.replySize
        if left < 0 { throw ItemSizeLimits.replyTooLarge }
    }

    /// Never more than `item` takes in the reply (KeychainResponse.Item.replySize):
    /// its data is its secret less the seal (a key's reply may carry a token instead,
    /// counted as nothing); its attributes are its sealed record less the seal and
    /// what only the record has (`recordOnly`).
    static func leastReplySize(of item: StoredItem, shape: ReturnShape) -> Int {
        var size = 2
        if shape.includesData {
            let data = item.columns.itemClass == .keys ? 0 : max(0, (item.secret?.count ?? 0) - AEAD.overhead)
            size += 7 + data
        }
        if shape.includesAttributes { size += 13 + max(0, item.sealedAttributes.count - AEAD.overhead - recordOnly) }
        return size
    }

    /// The most a record has beyond the text of the attributes a reply gives: four
    /// bytes of length before every name and value where a reply has one or two, for
    /// some thirty pairs, and the pairs a reply leaves out (created, modified, an
    /// access control's bound domain: about 150 bytes).
    static let recordOnly = 1024
}
