// A SecItem dictionary translated to the item store's request vocabulary. Only the
// spelling changes here (Apple's keys and values to the store's names); what a call
// means is the store's decision, the same code that answers `dpfs keychain`. A value
// of the wrong type, or a key this keychain does not know, is errSecParam.
import DPFSProtocol
import Foundation

/// A call refused before it reaches the device.
struct SecItemRefusal: Error {
    let status: OSStatus
    /// Whether the call names a class this keychain never holds an item of: a find,
    /// update or delete there finds nothing, as on an iPhone that holds none.
    var namesEmptyClass = false
    static let param = SecItemRefusal(status: errSecParam)
    static let emptyClass = SecItemRefusal(status: errSecUnimplemented, namesEmptyClass: true)
}

struct SecItemQuery {
    /// Store names ("service", "accessible", …) to store values ("WhenUnlocked", "yes", …).
    var attributes: [String: String] = [:]
    /// Blob attributes given as Data, by store name (`blobAttributes`).
    var dataAttributes: [String: Data] = [:]
    /// kSecAttrGeneric given as a String, under "generic" (its Data goes in hex in
    /// `attributes`).
    var textAttributes: [String: String] = [:]
    var valueData: Data?
    var returnData = false
    var returnAttributes = false
    var returnPersistentRef = false
    /// kSecReturnRef of key items: a SecKey.
    var returnRef = false
    /// kSecValueRef: the key a query names, or an add stores.
    var valueRef: SecKey?
    /// "one" or "all", as the store spells kSecMatchLimit.
    var limit: String?
    /// A numeric kSecMatchLimit above one: the store returns all, the caller gets this many.
    var count: Int?
    /// kSecUseAuthenticationUI, kSecUseOperationPrompt, kSecUseAuthenticationContext.
    var authentication: CallAuthentication?
    private var accessControl: SecAccessControl?
    /// The kSecMatch keys besides kSecMatchLimit (SecItemMatch).
    private(set) var matchTerms: [SecItemMatch.Term] = []

    enum Role {
        /// A query or a new item's attributes: kSecClass (or a persistent ref) required.
        case query
        /// SecItemUpdate's attributesToUpdate: attributes and kSecValueData only.
        case changes
    }

    init(_ dictionary: [String: Any], role: Role) throws {
        // Before any other key: the answer for a class that never holds an item here
        // must not depend on the order the dictionary lists its keys in.
        if role == .query, let itemClass = dictionary[kSecClass] as? String, Self.otherAppleClasses.contains(itemClass) {
            throw SecItemRefusal.emptyClass
        }
        var namesCertificateAttribute = false
        let isKeyClass = dictionary[kSecClass] as? String == kSecClassKey
        var refClass: String?
        for (key, value) in dictionary {
            if let name = Self.stringAttributes[key] {
                if Self.blobAttributes.contains(name), let bytes = value as? Data {
                    dataAttributes[name] = bytes
                } else {
                    attributes[name] = try Self.string(value)
                }
                continue
            }
            switch key {
            case kSecClass:
                let itemClass = try Self.string(value)
                guard itemClass == kSecClassGenericPassword || itemClass == kSecClassInternetPassword
                        || itemClass == kSecClassKey else {
                    // Certificates and identities are Apple classes this keychain lacks.
                    throw Self.otherAppleClasses.contains(itemClass) ? SecItemRefusal.emptyClass : SecItemRefusal.param
                }
                attributes["class"] = itemClass
            case kSecAttrPort:
                guard let port = value as? Int else { throw SecItemRefusal.param }
                attributes["port"] = String(port)
            case kSecAttrGeneric:
                // A blob on iOS too: a String is kept, and compared, as its UTF-8 bytes.
                if let text = value as? String {
                    textAttributes["generic"] = text
                } else {
                    guard let bytes = value as? Data else { throw SecItemRefusal.param }
                    attributes["generic"] = bytes.hexString
                }
            case kSecAttrCreator:
                attributes["creator"] = try Self.numberOrText(value)
            case kSecAttrType where !isKeyClass:
                // Apple spells kSecAttrKeyType with the same key, its values CFStrings.
                attributes["type"] = try Self.numberOrText(value)
            case kSecAttrIsInvisible, kSecAttrIsNegative:
                attributes[key == kSecAttrIsInvisible ? "isInvisible" : "isNegative"] = try Self.bool(value) ? "yes" : "no"
            case kSecAttrAccessible:
                guard let name = Self.accessibility[try Self.string(value)] else { throw SecItemRefusal.param }
                attributes["accessible"] = name
            case kSecAttrSynchronizable:
                if let any = value as? String, any == kSecAttrSynchronizableAny {
                    attributes["synchronizable"] = "any"
                } else {
                    attributes["synchronizable"] = try Self.bool(value) ? "yes" : "no"
                }
            case kSecValueData:
                guard let data = value as? Data else { throw SecItemRefusal.param }
                valueData = data
            case kSecValuePersistentRef where role == .query:
                guard let ref = value as? Data, let terms = PersistentRef.terms(of: ref) else {
                    throw SecItemRefusal.param
                }
                attributes.merge(terms.attributes) { _, fromRef in fromRef }
                refClass = terms.itemClass
            case kSecReturnData where role == .query: returnData = try Self.bool(value)
            case kSecReturnAttributes where role == .query: returnAttributes = try Self.bool(value)
            case kSecReturnPersistentRef where role == .query: returnPersistentRef = try Self.bool(value)
            case kSecMatchLimit where role == .query: try parseLimit(value)
            case kSecReturnRef where role == .query:
                // Only a key item has a ref object; iOS ignores a return key set to false.
                returnRef = try Self.bool(value)
            case kSecValueRef where role == .query:
                guard let key = value as? SecKey else { throw SecItemRefusal.param }
                valueRef = key
            case _ where role == .query && SecItemMatch.keys.contains(key):
                matchTerms.append(try SecItemMatch.term(key, value))
            case _ where Self.certificateAttributes.contains(key):
                namesCertificateAttribute = true
            case kSecAttrSyncViewHint:
                // No item here has a view hint, and none can be given one: an empty hint
                // (every item's) asks nothing.
                guard try !Self.string(value).isEmpty else { break }
                throw SecItemRefusal(status: errSecUnimplemented)
            case _ where KeyItemAttributes.handles(key):
                try KeyItemAttributes.parse(key, value, into: &attributes)
            case kSecUseDataProtectionKeychain:
                break  // one keychain: accepted as on iOS, where it changes nothing here
            case kSecAttrAccessControl:
                guard let access = value as? SecAccessControl else { throw SecItemRefusal.param }
                accessControl = access
            case kSecUseAuthenticationUI, kSecUseOperationPrompt, kSecUseAuthenticationContext, kSecUseNoAuthenticationUI:
                try parseAuthentication(key, value)
            default:
                // kSecReturnRef and kSecValueRef included: a password item has no ref object.
                throw SecItemRefusal.param
            }
        }
        if let key = valueRef { KeyItemAttributes.identify(key, in: &attributes) }
        // A kSecClass beside the ref stays: a ref of another class finds nothing.
        if attributes["class"] == nil { attributes["class"] = refClass }
        if role == .query && attributes["class"] == nil { throw SecItemRefusal.param }
        // Every class here lacks the certificate attributes: iOS's errSecNoSuchAttr.
        if namesCertificateAttribute { throw SecItemRefusal(status: errSecNoSuchAttr) }
        // A password has no ref object (Apple's SecItemCreateFromAttributeDictionary
        // makes none for it): kSecReturnRef asks nothing more of the call.
        if attributes["class"] != kSecClassKey { returnRef = false }
        if let accessControl {
            // The access control carries the accessibility: a kSecAttrAccessible beside
            // it must say the same (as an attribute dictionary read back and reused does).
            guard let name = accessControl.accessibleName, attributes["accessible"] ?? name == name else {
                throw SecItemRefusal.param
            }
            attributes["accessible"] = name
            // Without flags it asks nothing: iOS keeps only its protection, the
            // accessibility, as every item's kSecReturnAttributes hands back.
            if !accessControl.flags.isEmpty { attributes["accessControl"] = String(accessControl.flags.rawValue) }
        }
    }

    /// A find's or update's match terms as the store's attributes (SecItemMatch).
    mutating func applyMatchTerms() throws {
        for term in matchTerms {
            switch term {
            case .nothing:
                continue
            case .certificateChain:
                throw SecItemRefusal(status: errSecUnimplemented)
            case .hostOrSubdomain(let host):
                guard attributes["class"] == kSecClassInternetPassword else { throw SecItemRefusal(status: errSecUnimplemented) }
                attributes["hostOrSubdomainOf"] = host
            }
        }
    }

    private mutating func parseAuthentication(_ key: String, _ value: Any) throws {
        var call = authentication ?? CallAuthentication()
        guard AuthenticationOption.apply(key, value, to: &call) else { throw SecItemRefusal.param }
        authentication = call
    }

    private mutating func parseLimit(_ value: Any) throws {
        if let name = value as? String {
            switch name {
            case kSecMatchLimitOne: limit = "one"
            case kSecMatchLimitAll: limit = "all"
            default: throw SecItemRefusal.param
            }
        } else if let number = value as? Int, number >= 1 {
            limit = number == 1 ? "one" : "all"
            count = number == 1 ? nil : number
        } else {
            throw SecItemRefusal.param
        }
    }

    /// What a find or add asks back, in the store's words: attributes also when only a
    /// persistent ref is wanted (the ref is made from them), and attributes when nothing
    /// is (the cheapest reply that still says whether a match exists and is available).
    var returning: String? {
        // A SecKey is made from the key item's attributes and its data.
        if returnRef { return "both" }
        let wantsAttributes = returnAttributes || returnPersistentRef
        switch (returnData, wantsAttributes) {
        case (true, true): return "both"
        case (true, false): return "data"
        case (false, true): return "attributes"
        case (false, false): return nil
        }
    }

    var wantsResult: Bool { returnData || returnAttributes || returnPersistentRef || returnRef }

    private static func string(_ value: Any) throws -> String {
        guard let string = value as? String else { throw SecItemRefusal.param }
        return string
    }

    /// kSecAttrCreator and kSecAttrType: a FourCharCode (UInt32), any integer or
    /// NSNumber in its range, or a String, which securityd keeps as text unless it is
    /// the decimal form of a number (SecDbItem's copyNumber): "42" is the number 42,
    /// "Creator Test" and "042" stay text. The store tells the two apart the same way.
    private static func numberOrText(_ value: Any) throws -> String {
        if let text = value as? String { return text }
        if let code = value as? UInt32 { return String(code) }
        if let number = value as? Int, let code = UInt32(exactly: number) { return String(code) }
        if let number = value as? NSNumber, let code = UInt32(exactly: number.int64Value) { return String(code) }
        throw SecItemRefusal.param
    }

    /// true/false, kCFBooleanTrue/False, or an NSNumber 0 or 1, as CFBoolean accepts.
    private static func bool(_ value: Any) throws -> Bool {
        guard let flag = value as? Bool else { throw SecItemRefusal.param }
        return flag
    }

    /// Attributes whose value is a string under both names.
    static let stringAttributes: [String: String] = [
        kSecAttrService: "service", kSecAttrAccount: "account", kSecAttrServer: "server",
        kSecAttrProtocol: "protocol", kSecAttrPath: "path", kSecAttrSecurityDomain: "securityDomain",
        kSecAttrAuthenticationType: "authenticationType", kSecAttrLabel: "label", kSecAttrAccessGroup: "accessGroup",
        kSecAttrDescription: "description", kSecAttrComment: "comment",
    ]

    /// What iOS keeps as blobs (SecItemSchema's kSecDbBlobAttr) among them: given as
    /// a String or as Data, compared by their bytes, returned as they were given.
    static let blobAttributes: Set<String> = ["service", "account", "path", "securityDomain", "server", "label",
                                              "description", "comment"]

    /// kSecAttrAccessible values and the store's names for them.
    static let accessibility: [String: String] = [
        kSecAttrAccessibleWhenUnlocked: "WhenUnlocked",
        kSecAttrAccessibleAfterFirstUnlock: "AfterFirstUnlock",
        kSecAttrAccessibleAlways: "Always",
        kSecAttrAccessibleWhenUnlockedThisDeviceOnly: "WhenUnlockedThisDeviceOnly",
        kSecAttrAccessibleAfterFirstUnlockThisDeviceOnly: "AfterFirstUnlockThisDeviceOnly",
        kSecAttrAccessibleAlwaysThisDeviceOnly: "AlwaysThisDeviceOnly",
        kSecAttrAccessibleWhenPasscodeSetThisDeviceOnly: "WhenPasscodeSetThisDeviceOnly",
    ]

    /// Attributes of certificates and identities only.
    static let certificateAttributes: Set<String> = [
        kSecAttrSubject, kSecAttrIssuer, kSecAttrSerialNumber, kSecAttrSubjectKeyID, kSecAttrPublicKeyHash,
        kSecAttrCertificateType, kSecAttrCertificateEncoding,
    ]

    /// kSecClassCertificate, kSecClassKey, kSecClassIdentity.
    static let otherAppleClasses: Set<String> = [kSecClassCertificate, kSecClassIdentity]
}
