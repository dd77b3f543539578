// The on-disk keybag (keybag.json, see dpfs(5)): KDF parameters, the class keys wrapped
// by the passcode key or the device key, the completeUnlessOpen public key, and the
// passcode policy state. It holds no secret in clear. It carries a MAC under a key
// derived from the device secret (an edited keybag — a reset failure counter — is
// refused) and a generation, mirrored in keybag.seq (KeybagSequence), so that an older
// copy put back in its place mounts with the worst-case failure count, not its own.
// It names the device (a UUID) and the secret store that holds the device secret.
import Foundation

public struct KeybagFile: Codable, Sendable {
    public static let currentVersion = 3

    public var formatVersion = KeybagFile.currentVersion
    public var kdf: KDFParameters
    public var passcodeSet: Bool
    /// Sealed class keys by class name, plus "completeUnlessOpenPrivate".
    public var wrappedKeys: [String: Bytes]
    public var completeUnlessOpenPublicKey: Bytes
    public var defaultProtection: ProtectionClass
    public var policy: PasscodePolicy
    /// The device's identity, by which its secret store names the device secret.
    public var deviceUUID = ""
    /// Where the device secret lives: `file:DIR` (SecretStoreLocation's description).
    public var secretStore = ""
    public var generation = 0
    public var mac: Bytes?

    /// The keybag as stored, not yet authenticated: what a device needs to find its secret.
    static func decode(from directory: DeviceDirectory) throws -> KeybagFile {
        let bytes = try AtomicFile.read(directory.keybagPath)
        // The version alone first: an older format is named as such, not as damage.
        struct Version: Decodable { var formatVersion: Int }
        guard let version = try? JSONDecoder().decode(Version.self, from: Data(bytes)) else {
            throw DeviceError.corruptKeybag("\(directory.keybagPath) cannot be parsed")
        }
        guard version.formatVersion == currentVersion else {
            throw DeviceError.unsupportedFormat(directory.root, version.formatVersion)
        }
        do {
            return try JSONDecoder().decode(KeybagFile.self, from: Data(bytes))
        } catch {
            throw DeviceError.corruptKeybag("\(directory.keybagPath) cannot be parsed")
        }
    }

    /// The device's secret, from the store its keybag names.
    public static func loadDeviceSecret(of directory: DeviceDirectory) throws -> SecureBuffer {
        let file = try decode(from: directory)
        guard !file.deviceUUID.isEmpty, let location = try? SecretStoreLocation(parsing: file.secretStore),
              file.secretStore.hasPrefix("file:") else {
            throw DeviceError.corruptKeybag("it names no valid secret store")
        }
        return try DeviceSecretStore.load(for: file.deviceUUID, from: location)
    }

    public static func load(from directory: DeviceDirectory, deviceSecret: SecureBuffer) throws -> KeybagFile {
        let file = try decode(from: directory)
        guard let mac = file.mac, try file.authenticator(deviceSecret) == mac.value else {
            throw DeviceError.corruptKeybag("its MAC does not verify: it was altered or belongs to another device")
        }
        return file
    }

    /// Saves atomically as the next generation.
    public mutating func save(in directory: DeviceDirectory, deviceSecret: SecureBuffer) throws {
        generation += 1
        mac = Bytes(try authenticator(deviceSecret))
        try AtomicFile.write(try Self.encode(self), to: directory.keybagPath)
        // Written after the keybag: a crash between leaves the record behind, never ahead.
        try AtomicFile.write(Array("\(generation)\n".utf8), to: directory.keybagSequencePath)
    }

    static func encode(_ file: KeybagFile) throws -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        return [UInt8](try encoder.encode(file))
    }

    /// Keyed BLAKE2b of the keybag without its MAC.
    func authenticator(_ deviceSecret: SecureBuffer) throws -> [UInt8] {
        var unsigned = self
        unsigned.mac = nil
        let body = try Self.encode(unsigned)
        let key = PasscodeKDF.deviceKey(deviceSecret: deviceSecret, purpose: "dpfs.keybag-mac.v1")
        var digest = [UInt8](repeating: 0, count: 32)
        body.withUnsafeBytes { message in digest.withUnsafeMutableBytes { Sodium.hash(message, key: key.bytes, into: $0) } }
        return digest
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
