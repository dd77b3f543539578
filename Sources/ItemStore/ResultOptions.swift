// kSecMatchLimit and kSecReturnData/kSecReturnAttributes as a request spells them.
import DPFSProtocol

enum ReturnShape: Sendable {
    case data, attributes, both

    var includesData: Bool { self != .attributes }
    var includesAttributes: Bool { self != .data }

    /// nil when the request asks for nothing back.
    static func parse(_ name: String?) throws -> ReturnShape? {
        switch name {
        case nil: return nil
        case "data": return .data
        case "attributes": return .attributes
        case "both": return .both
        default: throw SecError(SecStatus.param, "return must be data, attributes or both")
        }
    }
}

enum MatchLimit: Sendable {
    case one, all

    static func parse(_ name: String?, default fallback: MatchLimit) throws -> MatchLimit {
        switch name {
        case nil: return fallback
        case "one", "1": return .one
        case "all": return .all
        default: throw SecError(SecStatus.param, "limit must be one or all")
        }
    }
}
