// The attribute vocabulary of a keychain call (request keys, as SecItem names them)
// and its parsing into typed values. Parsing checks each value and that it belongs to
// the item class; which attributes an operation may carry is the operation's call.
import DPFSProtocol
import Foundation

enum ItemClass: String, Sendable {
    case genp, inet, keys

    init?(name: String) {
        switch name {
        case "genp", "kSecClassGenericPassword", "GenericPassword": self = .genp
        case "inet", "kSecClassInternetPassword", "InternetPassword": self = .inet
        case "keys", "kSecClassKey", "Key": self = .keys
        default: return nil
        }
    }

    /// Apple's uniqueness key, besides access group and synchronizable.
    var keyAttributes: [KeyAttribute] {
        switch self {
        case .genp: return Self.genericPasswordKeys
        case .inet: return Self.internetPasswordKeys
        case .keys: return Self.keyKeys
        }
    }

    // Stored once: every query and record asks for its class's list several times.
    private static let genericPasswordKeys: [KeyAttribute] = [.service, .account]
    private static let internetPasswordKeys: [KeyAttribute] = [.server, .protocolType, .port, .path, .account,
                                                               .securityDomain, .authenticationType]
    private static let keyKeys: [KeyAttribute] = [.keyClass, .applicationLabel, .applicationTag, .keyType,
                                                  .keySizeInBits, .tokenID]
}

/// Attributes that are part of an item's identity; their raw value is both the request
/// key and the column name.
enum KeyAttribute: String, CaseIterable, Sendable {
    case service, account, server, protocolType = "protocol", port, path, securityDomain, authenticationType
    /// Of keys: "private" or "public"; the application label and tag in hex; "ec";
    /// the size in bits; "secureEnclave" for a key that never leaves the daemon.
    case keyClass, applicationLabel, applicationTag, keyType, keySizeInBits, tokenID

    /// The stored value of an absent attribute: Apple treats absent as empty.
    var absent: String { self == .port ? "0" : "" }
}

// Every call looks its attributes up by key dozens of times; RawRepresentable's
// default would hash and compare the raw strings.
extension KeyAttribute: Hashable {
    static func == (lhs: Self, rhs: Self) -> Bool { lhs.position == rhs.position }

    func hash(into hasher: inout Hasher) { hasher.combine(position) }

    /// The case's place in `allCases`.
    var position: Int {
        switch self {
        case .service: 0
        case .account: 1
        case .server: 2
        case .protocolType: 3
        case .port: 4
        case .path: 5
        case .securityDomain: 6
        case .authenticationType: 7
        case .keyClass: 8
        case .applicationLabel: 9
        case .applicationTag: 10
        case .keyType: 11
        case .keySizeInBits: 12
        case .tokenID: 13
        }
    }
}

enum SyncFilter: Sendable, Equatable {
    case no, yes, any

    init?(name: String) {
        switch name.lowercased() {
        case "no", "false", "0": self = .no
        case "yes", "true", "1": self = .yes
        case "any", "ksecattrsynchronizableany": self = .any
        default: return nil
        }
    }
}

struct ParsedAttributes {
    var itemClass: ItemClass?
    var keys: [KeyAttribute: String] = [:]
    /// Of `keys`, those given as Data: their value is the bytes in hex (BlobAttributes).
    var dataValued: Set<KeyAttribute> = []
    /// The label, description or comment when given as Data, their value the bytes in hex.
    var sealedDataValued: Set<String> = []
    /// Generic when given as a String (its value is hex as always, of the text's bytes).
    var textValued: Set<String> = []
    var label: String?
    /// Of keys: the public key's X9.63 form in hex, sealed with the attributes.
    var publicKey: String?
    var accessGroup: String?
    var accessible: Accessibility?
    var synchronizable: SyncFilter?
    /// kSecAttrAccessControl's flags: a new item's, or a query's term (ItemQuery).
    var accessControl: AccessControlFlags?
    var descriptive: [DescriptiveAttribute: String] = [:]
    /// kSecMatchHostOrSubdomainOfHost: a find's or update's internet passwords whose
    /// server is this host or one of its subdomains (ItemQuery).
    var hostOrSubdomainOf: String?
    /// A find's, update's or delete's item named by its persistent reference (ItemQuery).
    var persistentRef: PersistentReference?

    /// `classContext` is the class the attributes apply to when they carry none
    /// (update's new attributes apply to the query's class).
    /// `matching`: the attributes are a find's or update's query, which alone may
    /// carry match terms. `isQuery`: the attributes select stored items (a find's,
    /// update's or delete's), which alone may name one by its persistent reference.
    /// `data`: the blob attributes given as Data (KeychainRequest.dataAttributes);
    /// `text`: generic given as a String (KeychainRequest.textAttributes).
    init(_ raw: [String: String], data: [String: Data]? = nil, text: [String: String]? = nil,
         classContext: ItemClass? = nil, matching: Bool = false, isQuery: Bool = false) throws {
        for (name, bytes) in data ?? [:] {
            guard BlobAttributes.dataNames.contains(name) else {
                throw SecError(SecStatus.param, "\(name) is not an attribute that may be given as bytes")
            }
            guard raw[name] == nil else { throw SecError(SecStatus.param, "\(name) is given both as text and as bytes") }
            if let key = KeyAttribute(rawValue: name) {
                keys[key] = bytes.hexString
                dataValued.insert(key)
            } else if let attribute = DescriptiveAttribute(rawValue: name) {
                descriptive[attribute] = bytes.hexString
                sealedDataValued.insert(name)
            } else {
                label = bytes.hexString
                sealedDataValued.insert(name)
            }
        }
        for (name, value) in text ?? [:] {
            guard BlobAttributes.textNames.contains(name), let attribute = DescriptiveAttribute(rawValue: name) else {
                throw SecError(SecStatus.param, "\(name) is not an attribute that may be given as text here")
            }
            guard raw[name] == nil else { throw SecError(SecStatus.param, "\(name) is given both as text and as bytes") }
            descriptive[attribute] = Data(value.utf8).hexString
            textValued.insert(name)
        }
        for (name, value) in raw {
            switch name {
            case "class":
                guard let parsed = ItemClass(name: value) else { throw SecError(SecStatus.param, "class must be genp, inet or keys") }
                itemClass = parsed
            case "label": label = value
            case "publicKey": publicKey = value
            case "hostOrSubdomainOf":
                guard matching else {
                    throw SecError(SecStatus.param, "hostOrSubdomainOf is a term of a find's or update's query only")
                }
                hostOrSubdomainOf = value
            case PersistentReference.attributeName:
                guard isQuery || matching else { throw SecError(SecStatus.param, "persistentRef is a term of a query only") }
                guard let reference = PersistentReference(hex: value) else {
                    throw SecError(SecStatus.param, "persistentRef is not a persistent reference")
                }
                persistentRef = reference
            case "accessGroup":
                guard !value.isEmpty else { throw SecError(SecStatus.param, "the access group may not be empty") }
                accessGroup = value
            case "accessible":
                guard let parsed = Accessibility(name: value) else {
                    throw SecError(SecStatus.param, "accessible must be one of \(Accessibility.validNames)")
                }
                accessible = parsed
            case "synchronizable":
                guard let parsed = SyncFilter(name: value) else { throw SecError(SecStatus.param, "synchronizable must be yes, no or any") }
                synchronizable = parsed
            case "accessControl":
                guard let flags = AccessControlFlags(names: value) else {
                    throw SecError(SecStatus.param, "accessControl must be flags such as biometryCurrentSet or userPresence")
                }
                // What no item can have; a combination Apple refuses only for a new one
                // is refused where one is made (bind).
                if let problem = flags.unsupported { throw SecError(SecStatus.param, problem) }
                accessControl = flags
            default:
                if let attribute = DescriptiveAttribute(rawValue: name) {
                    descriptive[attribute] = try attribute.canonical(value)
                    continue
                }
                guard let key = KeyAttribute(rawValue: name) else { throw SecError(SecStatus.param, "unknown attribute \(name)") }
                keys[key] = try Self.canonical(key, value)
            }
        }
        // A ref names its class: a query with the ref alone asks for that class.
        if itemClass == nil, let persistentRef { itemClass = ItemClass(rawValue: persistentRef.itemClass) }
        let effectiveClass = itemClass ?? classContext ?? .genp
        let foreign = keys.keys.filter { !effectiveClass.keyAttributes.contains($0) }.map(\.rawValue)
            + descriptive.keys.filter { !$0.applies(to: effectiveClass) }.map(\.rawValue)
            + (hostOrSubdomainOf != nil && effectiveClass != .inet ? ["hostOrSubdomainOf"] : [])
        if let name = foreign.first {
            throw SecError(SecStatus.param, "\(name) is not an attribute of \(effectiveClass.rawValue) items")
        }
    }

    /// The bytes of a descriptive attribute's value as given (BlobAttributes).
    func descriptiveBytes(_ attribute: DescriptiveAttribute) -> Data? {
        descriptive[attribute].map {
            BlobAttributes.bytes($0, hex: attribute == .generic || sealedDataValued.contains(attribute.rawValue))
        }
    }

    /// Ports compare as numbers, so "0443" finds the item added as "443".
    private static func canonical(_ key: KeyAttribute, _ value: String) throws -> String {
        if key == .keySizeInBits {
            guard let bits = Int(value), bits > 0 else { throw SecError(SecStatus.param, "keySizeInBits must be a number") }
            return String(bits)
        }
        guard key == .port else { return value }
        guard let port = Int(value), (0...65535).contains(port) else {
            throw SecError(SecStatus.param, "port must be a number from 0 to 65535")
        }
        return String(port)
    }
}

/// Lets a client (the CLI) check attribute values before sending a call.
public enum KeychainAttributes {
    /// Why these attributes would be refused with errSecParam, or nil when they parse.
    /// `itemClass` is the class they apply to when they name none.
    public static func problem(in attributes: [String: String], itemClass: String? = nil) -> String? {
        do {
            _ = try ParsedAttributes(attributes, classContext: itemClass.flatMap(ItemClass.init(name:)))
            return nil
        } catch let error as SecError {
            return error.reason ?? SecStatus.describe(error.status)
        } catch {
            return "\(error)"
        }
    }
}
