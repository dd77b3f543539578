// The on-disk keybag (keybag.json, see dpfs(5)): KDF parameters, the class keys wrapped
// by the passcode key or the device key, the completeUnlessOpen public key, and the
// passcode policy state. It holds no secret in clear. It carries a MAC under a key
// derived from the device secret (an edited keybag — a reset failure counter — is
// refused) and a generation, recorded with the failure count in the device's record in
// its secret store (DeviceRecord), so that an older copy put back in its place is
// refused at mount. It names the device (a UUID) and the secret store that holds the
// device secret.
import Foundation

public struct KeybagFile: Codable, Sendable {
    /// The one format read: any other is refused, not migrated (dpfs has no deployed
    /// devices to carry over).
    public static let currentVersion = 5

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
    /// Where the device secret lives: `file:DIR` or `tpm2:TCTI` (SecretStoreLocation's description).
    public var secretStore = ""
    /// With a tpm2 store: the sealed device secret's blobs (they load into that TPM only).
    public var tpmSealedSecret: TPMSealedBlobs?
    /// With a tpm2 store and a passcode: the passcode gate's blobs (Keybag+Passcode).
    public var tpmPasscodeGate: TPMSealedBlobs?
    /// The class of each directory whose class was changed through the mount, by its
    /// ID in hex (DirectoryClassRecord): a record put back from before a raise names a
    /// weaker class and is refused. Kept here so the keybag's generation, recorded in
    /// the secret store, vouches for it; nil until the first change.
    public var directoryClasses: [String: ProtectionClass]?
    /// How many times the passcode was removed; nil until the first removal. What a
    /// WhenPasscodeSetThisDeviceOnly key binds (SecureEnclaveKeys), so that it dies with
    /// the passcode, as iOS destroys that class's key, and a new passcode never brings
    /// it back.
    public var passcodeRemovals: Int?
    /// How many times the key material was erased after too many failed attempts; nil
    /// until the first erase. The keychain counts the erases it has deleted its items
    /// for (ItemStore+Erase), so that one a kill cut short is finished at its next open.
    public var erasures: Int?
    public var generation = 0
    public var mac: Bytes?

    /// The keybag as stored, not yet authenticated: what a device needs to find its secret.
    static func decode(from directory: DeviceDirectory) throws -> KeybagFile {
        guard let bytes = try AtomicFile.read(directory.keybagPath, atMost: largestSize) else {
            throw DeviceError.corruptKeybag("\(directory.keybagPath) is larger than any keybag")
        }
        return try decode(bytes, of: directory)
    }

    /// Far beyond a real keybag, whose one growing part is a line per directory whose
    /// class was changed.
    public static let largestSize = 16 << 20

    /// The keybag of `directory` (named in errors) from its bytes.
    static func decode(_ bytes: [UInt8], of directory: DeviceDirectory) throws -> KeybagFile {
        // The version alone first: an older format is named as such, not as damage.
        struct Version: Decodable { var formatVersion: Int }
        guard let version = try? JSONDecoder().decode(Version.self, from: Data(bytes)) else {
            throw DeviceError.corruptKeybag("\(directory.keybagPath) cannot be parsed")
        }
        guard version.formatVersion == currentVersion else {
            throw DeviceError.unsupportedFormat(directory.root, version.formatVersion)
        }
        let file: KeybagFile
        do {
            file = try JSONDecoder().decode(KeybagFile.self, from: Data(bytes))
        } catch {
            throw DeviceError.corruptKeybag("\(directory.keybagPath) cannot be parsed")
        }
        // The UUID names the device's files in its secret store: it is read before
        // the MAC can be checked, so anything but a UUID could name another path.
        guard UUIDText.isValid(file.deviceUUID) else {
            throw DeviceError.corruptKeybag("\(directory.keybagPath) names no valid device UUID")
        }
        return file
    }

    /// The device's secret, from the store its keybag names.
    public static func loadDeviceSecret(of directory: DeviceDirectory) throws -> SecureBuffer {
        let file = try decode(from: directory)
        return try DeviceSecretStore.load(for: file.deviceUUID, from: try file.storeLocation(), sealed: file.tpmSealedSecret)
    }

    /// The device's UUID and the store its keybag names, read without the secret (to
    /// find the device's entries in the store; nothing here is trusted for more).
    public static func storeEntry(of directory: DeviceDirectory) throws -> (deviceUUID: String, store: SecretStoreLocation) {
        let file = try decode(from: directory)
        return (file.deviceUUID, try file.storeLocation())
    }

    /// As `storeEntry(of:)`, from the bytes of the keybag of `directory` (named in
    /// errors) that the caller read: through a directory it holds open, say, whose
    /// path someone could point elsewhere meanwhile.
    public static func storeEntry(decoding bytes: [UInt8], of directory: DeviceDirectory) throws
        -> (deviceUUID: String, store: SecretStoreLocation) {
        let file = try decode(bytes, of: directory)
        return (file.deviceUUID, try file.storeLocation())
    }

    /// The TCTI of a tpm2 store, nil for any other.
    var tpmTCTI: String? {
        guard secretStore.hasPrefix("tpm2:"), case .tpm2(let tcti)? = try? SecretStoreLocation(parsing: secretStore) else {
            return nil
        }
        return tcti
    }

    /// The secret store the keybag names (a mount never takes it from anywhere else).
    public func storeLocation() throws -> SecretStoreLocation {
        guard !deviceUUID.isEmpty, secretStore.contains(":"),
              let location = try? SecretStoreLocation(parsing: secretStore) else {
            throw DeviceError.corruptKeybag("it names no valid secret store")
        }
        return location
    }

    public static func load(from directory: DeviceDirectory, deviceSecret: SecureBuffer) throws -> KeybagFile {
        let file = try decode(from: directory)
        guard let mac = file.mac, try file.authenticator(deviceSecret) == mac.value else {
            throw DeviceError.keybagDoesNotVerify(store: file.secretStore, deviceUUID: file.deviceUUID)
        }
        return file
    }

    /// Saves atomically as the next generation, the device's record first: a crash
    /// between the two writes leaves the record one generation ahead of the keybag,
    /// holding the newer failure count, never behind it. A mount accepts a keybag one
    /// generation behind its record (that crash) with the record's count and erase.
    /// The save is done twice ("settled"), so the keybag one generation behind the
    /// record always has the same contents as the newest: putting back the keybag from
    /// before the last save — an old passcode, keys an erase destroyed — is refused.
    /// A save whose keybag write failed (a full disk) leaves the record one ahead as
    /// that crash does, and the next save from the keybag on disk takes that same
    /// generation: failed saves never leave the record two ahead, which would read
    /// as an old copy put back. So a save that throws leaves `generation` at the
    /// keybag on disk: unchanged when it wrote none, else the one it wrote, which the
    /// caller then keeps (a later save under that generation would write other
    /// contents under it, and a copy of these would pass for the crash).
    /// The record's failure count only grows here (attempts another copy of the
    /// directory counted stay counted), unless `resettingFailures`: a passcode
    /// verified, which clears it as on iOS.
    public mutating func save(in directory: DeviceDirectory, deviceSecret: SecureBuffer,
                              resettingFailures: Bool = false) throws {
        let location = try storeLocation()
        let text = try KeybagText(self)
        var onDisk = generation
        defer { generation = onDisk }
        for _ in 0..<2 {
            let current = generation
            let policy = self.policy
            let record = try DeviceRecordStore.update(for: deviceUUID, in: location) { record in
                record.keybagGeneration = max(record.keybagGeneration, current + 1)
                record.failedAttempts = resettingFailures ? policy.failedAttempts
                    : max(record.failedAttempts, policy.failedAttempts)
                record.erased = policy.erased
            }
            generation = record.keybagGeneration
            try AtomicFile.write(try signedEncoding(text, deviceSecret: deviceSecret), to: directory.keybagPath)
            onDisk = generation
        }
    }

    /// The keybag's bytes as written, its MAC set over exactly them without it.
    private mutating func signedEncoding(_ text: KeybagText?, deviceSecret: SecureBuffer) throws -> [UInt8] {
        guard var text else {
            mac = Bytes(try authenticator(deviceSecret))
            return try Self.encode(self)
        }
        text.generation = generation
        let signature = Bytes(Self.authenticator(of: text.unsigned, deviceSecret: deviceSecret))
        mac = signature
        return try text.signed(mac: signature)
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
        return Self.authenticator(of: try Self.encode(unsigned), deviceSecret: deviceSecret)
    }

    static func authenticator(of body: [UInt8], deviceSecret: SecureBuffer) -> [UInt8] {
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
