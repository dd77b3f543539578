// The kSecMatch keys besides kSecMatchLimit, answered as iOS's keychain daemon answers
// them for passwords and keys (its query parser and per-item match in securityd):
// - kSecMatchCaseInsensitive, kSecMatchSubjectContains, kSecMatchItemList and
//   kSecMatchSearchList are recorded there and change nothing: attributes still
//   compare exactly, byte for byte.
// - kSecMatchValidOnDate (a Date or NSNull), kSecMatchTrustedOnly (a Bool) and
//   kSecMatchEmailAddressIfPresent (a String) filter certificates and identities
//   only; other values are errSecParam.
// - kSecMatchIssuers with an issuer (a non-empty Data) asks a certificate chain:
//   errSecUnimplemented (securityd's errSecUnsupportedOperation) for other classes.
// - kSecMatchPolicy takes only a SecPolicy, which does not exist here: errSecParam.
// - kSecMatchHostOrSubdomainOfHost (a String) keeps the internet passwords whose
//   server is the host or ends with "." and the host; other classes: errSecUnimplemented.
// Add and delete take no match keys (securityd's errSecItemMatchUnsupported, which is
// errSecParam), nor do SecItemUpdate's attributes to change.
import Foundation

enum SecItemMatch {
    static let keys: Set<String> = [
        kSecMatchCaseInsensitive, kSecMatchSubjectContains, kSecMatchItemList, kSecMatchSearchList,
        kSecMatchValidOnDate, kSecMatchTrustedOnly, kSecMatchEmailAddressIfPresent, kSecMatchIssuers,
        kSecMatchPolicy, kSecMatchHostOrSubdomainOfHost,
    ]

    /// What one match key asks of a query.
    enum Term: Equatable {
        case nothing
        /// Only certificates and identities could satisfy it.
        case certificateChain
        case hostOrSubdomain(String)
    }

    static func term(_ key: String, _ value: Any) throws -> Term {
        switch key {
        case kSecMatchValidOnDate:
            guard value is Date || value is NSNull else { throw SecItemRefusal.param }
        case kSecMatchTrustedOnly:
            guard value as? Bool != nil else { throw SecItemRefusal.param }
        case kSecMatchEmailAddressIfPresent:
            guard value is String else { throw SecItemRefusal.param }
        case kSecMatchIssuers:
            // securityd keeps only the array's issuers (Data), and ignores the key without any.
            guard let issuers = value as? [Any], issuers.contains(where: { ($0 as? Data)?.isEmpty == false }) else {
                return .nothing
            }
            return .certificateChain
        case kSecMatchPolicy:
            throw SecItemRefusal.param
        case kSecMatchHostOrSubdomainOfHost:
            guard let host = value as? String else { throw SecItemRefusal.param }
            return .hostOrSubdomain(host)
        default:
            break
        }
        return .nothing
    }
}
