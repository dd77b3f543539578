// A directory's class (the class its new children take), as stored in the backing
// directory's `user.dpfs.protection` attribute: class number ‖ the directory's random
// ID ‖ a MAC under the metadata key. A record that is missing or does not verify is
// damage (EIO), never a fallback to some weaker class.

public enum DirectoryClassRecord {
    public static let directoryIDSize = 16
    public static let size = 1 + directoryIDSize + MetadataKey.macSize

    public struct Decoded: Sendable, Equatable {
        public let protectionClass: ProtectionClass
        public let directoryID: [UInt8]

        public init(protectionClass: ProtectionClass, directoryID: [UInt8]) {
            self.protectionClass = protectionClass
            self.directoryID = directoryID
        }
    }

    public static func encode(_ protectionClass: ProtectionClass, directoryID: [UInt8], metadataKey: SecureBuffer) -> [UInt8] {
        let body = [protectionClass.rawValue] + directoryID
        return body + mac(body, metadataKey)
    }

    /// The class and ID, or nil when the record is malformed or forged.
    public static func decode(_ bytes: some Collection<UInt8>, metadataKey: SecureBuffer) -> Decoded? {
        let bytes = Array(bytes)
        guard bytes.count == size, let protectionClass = ProtectionClass(rawValue: bytes[0]) else { return nil }
        let body = Array(bytes[0..<1 + directoryIDSize])
        guard MetadataKey.matches(mac(body, metadataKey), bytes[(1 + directoryIDSize)...]) else { return nil }
        return Decoded(protectionClass: protectionClass, directoryID: Array(body[1...]))
    }

    public static func newDirectoryID() -> [UInt8] { Sodium.randomBytes(directoryIDSize) }

    static func mac(_ body: [UInt8], _ key: SecureBuffer) -> [UInt8] {
        MetadataKey.mac(Array("dpfs.directory-class.v2".utf8) + body, key: key)
    }
}
