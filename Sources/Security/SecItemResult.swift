// The store's reply turned into what SecItemCopyMatching and SecItemAdd hand back on
// iOS: Data for data alone, an attribute dictionary under Apple's keys (with v_Data
// and v_PersistentRef when asked for too), and an array of those for kSecMatchLimitAll.
import DPFSProtocol
import Foundation

enum SecItemResult {
    /// errSecDecode (a SecItemRefusal) when a key item asked for as a ref yields no
    /// SecKey (a damaged row, or one without its public key): no success without the ref.
    static func object(for response: KeychainResponse, _ query: SecItemQuery) throws -> CFTypeRef? {
        guard query.wantsResult else { return nil }
        if query.limit == "all" {
            let values = try response.items.map { try value(for: $0, query) }
            let wanted = query.count.map { Array(values.prefix($0)) } ?? values
            return wanted as NSArray
        }
        return try response.items.first.map { try value(for: $0, query) as AnyObject }
    }

    private static func value(for item: KeychainResponse.Item, _ query: SecItemQuery) throws -> Any {
        let storeAttributes = item.attributes ?? [:]
        if query.returnRef {
            let key = KeyItemAttributes.key(from: storeAttributes, data: item.data, authentication: query.authentication)
            if key == nil && storeAttributes["class"] == kSecClassKey { throw SecItemRefusal(status: errSecDecode) }
            guard query.returnAttributes || query.returnData || query.returnPersistentRef else {
                // Not a key item: nothing to make a ref of.
                if let key { return key }
                return NSNull()
            }
            var dictionary = query.returnAttributes ? appleAttributes(storeAttributes, data: item.dataAttributes,
                                                                         text: item.textAttributes) : [:]
            if let key { dictionary[kSecValueRef] = key }
            if query.returnPersistentRef, let ref = PersistentRef.make(from: storeAttributes) {
                dictionary[kSecValuePersistentRef] = ref
            }
            return dictionary
        }
        let ref = query.returnPersistentRef ? PersistentRef.make(from: storeAttributes) : nil
        let kinds = [query.returnData, query.returnAttributes, query.returnPersistentRef].filter { $0 }.count
        if kinds == 1 && !query.returnAttributes {
            return (query.returnData ? item.data : ref) ?? Data()
        }
        var dictionary = query.returnAttributes
            ? appleAttributes(storeAttributes, data: item.dataAttributes, text: item.textAttributes) : [:]
        if query.returnData { dictionary[kSecValueData] = item.data ?? Data() }
        if let ref { dictionary[kSecValuePersistentRef] = ref }
        return dictionary
    }

    private static let dateStyle = Date.ISO8601FormatStyle(includingFractionalSeconds: true)
    private static let accessibilityCodes = Dictionary(
        uniqueKeysWithValues: SecItemQuery.accessibility.map { ($0.value, $0.key) })
    private static let appleNames = Dictionary(
        uniqueKeysWithValues: SecItemQuery.stringAttributes.map { ($0.value, $0.key) })

    /// Apple's keys and value types: String, Int for the port, Int for creator and
    /// type (String when they were given as text), NSNumber (a CFBoolean on Apple) for
    /// sync and the two flags, Data for generic and for the blob attributes given as
    /// Data (`data`), a String for generic given as one (`text`), Date for cdat and
    /// mdat, "ak"… for pdmn, and a SecAccessControl for every item, as iOS 11.3 and
    /// later give: without flags when the item has none.
    static func appleAttributes(_ store: [String: String], data: [String: Data]? = nil,
                                text: [String: String]? = nil) -> [String: Any] {
        var apple: [String: Any] = [:]
        if store["accessControl"] == nil, let protection = store["accessible"].flatMap({ accessibilityCodes[$0] }) {
            apple[kSecAttrAccessControl] = SecAccessControl(protection: protection, flags: [])
        }
        for (name, bytes) in data ?? [:] where SecItemQuery.blobAttributes.contains(name) {
            if let appleName = appleNames[name] { apple[appleName] = bytes }
        }
        if let generic = text?["generic"] { apple[kSecAttrGeneric] = generic }
        for (name, value) in store {
            switch name {
            case "class": apple[kSecClass] = value
            case PersistentReference.attributeName: continue  // kSecValuePersistentRef, when asked for
            case "port": apple[kSecAttrPort] = Int(value) ?? 0
            case "synchronizable": apple[kSecAttrSynchronizable] = NSNumber(value: value == "yes")
            case "accessible": apple[kSecAttrAccessible] = accessibilityCodes[value] ?? value
            case "accessControl":
                if let flags = CFOptionFlags(value), let protection = store["accessible"].flatMap({ accessibilityCodes[$0] }) {
                    apple[kSecAttrAccessControl] = SecAccessControl(protection: protection, flags: SecAccessControlCreateFlags(rawValue: flags))
                }
            case "generic": apple[kSecAttrGeneric] = Data(hexString: value) ?? Data()
            case "creator": apple[kSecAttrCreator] = numberOrText(value)
            case "type": apple[kSecAttrType] = numberOrText(value)
            case "isInvisible": apple[kSecAttrIsInvisible] = NSNumber(value: value == "yes")
            case "isNegative": apple[kSecAttrIsNegative] = NSNumber(value: value == "yes")
            case "creationDate": apple[kSecAttrCreationDate] = try? Date(value, strategy: dateStyle)
            case "modificationDate": apple[kSecAttrModificationDate] = try? Date(value, strategy: dateStyle)
            case _ where KeyItemAttributes.storeNames.contains(name):
                if let (appleName, appleValue) = KeyItemAttributes.apple(name, value) { apple[appleName] = appleValue }
            default: apple[appleNames[name] ?? name] = value
            }
        }
        return apple
    }

    /// A number stored in its decimal form, else the text it was given as.
    private static func numberOrText(_ value: String) -> Any {
        guard let number = UInt32(value), String(number) == value else { return value }
        return Int(number)
    }
}
