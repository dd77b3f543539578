// An item's persistent reference (kSecReturnPersistentRef, kSecValuePersistentRef) as
// an app holds it: "dpfsref2", the item's class as four ASCII bytes, and the item
// store's token for the item's row. The class is in clear because the library reads
// it to know what kind of query a ref makes; the token means something to the store
// of the device that made it and to nothing else. Requests and replies carry the
// whole reference, in hex, as the attribute "persistentRef".
public struct PersistentReference: Equatable, Sendable {
    public static let attributeName = "persistentRef"
    public static let tokenSize = 24
    private static let magic = Array("dpfsref2".utf8)
    private static let classes: Set<String> = ["genp", "inet", "keys"]

    /// "genp", "inet" or "keys".
    public let itemClass: String
    public let token: [UInt8]

    public init?(itemClass: String, token: [UInt8]) {
        guard Self.classes.contains(itemClass), token.count == Self.tokenSize else { return nil }
        self.itemClass = itemClass
        self.token = token
    }

    /// Nil for bytes that are not such a reference.
    public init?(_ bytes: some Collection<UInt8>) {
        let bytes = Array(bytes)
        guard bytes.count == Self.magic.count + 4 + Self.tokenSize, bytes.starts(with: Self.magic) else { return nil }
        let classBytes = bytes[Self.magic.count..<(Self.magic.count + 4)]
        self.init(itemClass: String(decoding: classBytes, as: UTF8.self),
                  token: Array(bytes[(Self.magic.count + 4)...]))
    }

    /// From the attribute's hex.
    public init?(hex: String) {
        guard let bytes = Hex.decode(hex) else { return nil }
        self.init(bytes)
    }

    public var bytes: [UInt8] { Self.magic + Array(itemClass.utf8) + token }

    public var hex: String { Hex.encode(bytes) }
}
