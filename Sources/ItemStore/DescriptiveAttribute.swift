// Attributes that describe a password item without being part of its identity:
// kSecAttrDescription, Comment, Generic, Creator, Type, IsInvisible and IsNegative.
// They live only in the sealed record (ItemRecord), never in a column, so a query
// naming one compares it once the record is open (ItemQuery). As in Apple's keychain,
// an item that was never given one does not match a query that names it.
import DPFSProtocol

/// Which descriptive attributes a class has, and their stored spelling.
enum DescriptiveAttribute: String, CaseIterable, Sendable {
    case description, comment
    /// Of generic passwords only: any bytes, hex in the store.
    case generic
    /// A FourCharCode as a decimal number, or text: iOS keeps a String that is not
    /// the decimal form of a number as that String (SecDbItem's copyNumber), and a
    /// value in decimal form is the number.
    case creator, type
    /// "yes" or "no".
    case isInvisible, isNegative

    func applies(to itemClass: ItemClass) -> Bool {
        switch itemClass {
        case .genp: return true
        case .inet: return self != .generic
        case .keys: return false
        }
    }

    /// The value as stored and compared: hex in lower case, yes/no for flags;
    /// errSecParam for a value of the wrong kind.
    func canonical(_ value: String) throws -> String {
        switch self {
        case .description, .comment:
            return value
        case .generic:
            guard value.count % 2 == 0, value.allSatisfy(\.isHexDigit) else {
                throw SecError(SecStatus.param, "generic must be bytes in hex")
            }
            return value.lowercased()
        case .creator, .type:
            return value
        case .isInvisible, .isNegative:
            switch value.lowercased() {
            case "yes", "true", "1": return "yes"
            case "no", "false", "0": return "no"
            default: throw SecError(SecStatus.param, "\(rawValue) must be yes or no")
            }
        }
    }

    /// The descriptive attributes among a received or imported item's `attributes`,
    /// each checked as a request's would be.
    static func values(in attributes: [String: String], of itemClass: ItemClass) throws -> [DescriptiveAttribute: String] {
        var values: [DescriptiveAttribute: String] = [:]
        for attribute in allCases {
            guard let value = attributes[attribute.rawValue] else { continue }
            guard attribute.applies(to: itemClass) else {
                throw SecError(SecStatus.param, "\(attribute.rawValue) is not an attribute of \(itemClass.rawValue) items")
            }
            values[attribute] = try attribute.canonical(value)
        }
        return values
    }
}
