// The on-disk keybag (keybag.json, see dpfs(5)): KDF parameters, the class keys wrapped
// by the passcode key or the device key, the completeUnlessOpen public key, and the
// passcode policy state. It holds no secret in clear.
import Foundation

public struct KeybagFile: Codable, Sendable {
    public static let currentVersion = 1

    public var formatVersion = KeybagFile.currentVersion
    public var kdf: KDFParameters
    public var passcodeSet: Bool
    /// Sealed class keys by class name, plus "completeUnlessOpenPrivate".
    public var wrappedKeys: [String: Bytes]
    public var completeUnlessOpenPublicKey: Bytes
    public var defaultProtection: ProtectionClass
    public var policy: PasscodePolicy

    public static func load(from path: String) throws -> KeybagFile {
        let bytes = try AtomicFile.read(path)
        do {
            let file = try JSONDecoder().decode(KeybagFile.self, from: Data(bytes))
            guard file.formatVersion == currentVersion else {
                throw DeviceError.corruptKeybag("format version \(file.formatVersion) is not supported")
            }
            return file
        } catch let error as DeviceError {
            throw error
        } catch {
            throw DeviceError.corruptKeybag("\(path) cannot be parsed")
        }
    }

    public func save(to path: String) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        try AtomicFile.write([UInt8](try encoder.encode(self)), to: path)
    }
}

/// Public bytes stored as base64 in JSON.
public struct Bytes: Codable, Sendable, Equatable {
    public var value: [UInt8]
    public init(_ value: [UInt8]) { self.value = value }
    public init(from decoder: Decoder) throws {
        let text = try decoder.singleValueContainer().decode(String.self)
        guard let data = Data(base64Encoded: text) else {
            throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath, debugDescription: "not base64"))
        }
        value = [UInt8](data)
    }
    public func encode(to encoder: Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(Data(value).base64EncodedString())
    }
}
