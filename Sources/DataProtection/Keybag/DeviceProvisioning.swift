// A new device's identity and keys: a UUID, a device secret in its secret store, and
// the keybag that names both. `dpfs init` saves the keybag last, once the rest of the
// device directory exists; tests and benchmarks make devices the same way.
import Glibc

public enum DeviceProvisioning {
    public struct NewDevice {
        public var keybag: KeybagFile
        /// The device secret, in locked memory; the caller wipes it when done.
        public let secret: SecureBuffer
    }

    /// A new device's UUID, for a caller that must note it somewhere before `create`
    /// stores anything under it.
    public static func newDeviceUUID() -> String {
        UUIDText.random()
    }

    public static func create(store: SecretStoreLocation, passcode: SecureBuffer?, defaultProtection: ProtectionClass,
                              eraseAfter: Int?, kdf: KDFParameters = .standard(),
                              deviceUUID: String = DeviceProvisioning.newDeviceUUID()) throws -> NewDevice {
        let (secret, sealed) = try DeviceSecretStore.create(for: deviceUUID, in: store)
        do {
            var keybag = try Keybag.create(passcode: passcode, deviceSecret: secret, defaultProtection: defaultProtection,
                                           eraseAfter: eraseAfter, kdf: kdf, secretStore: store.description)
            keybag.deviceUUID = deviceUUID
            keybag.tpmSealedSecret = sealed
            return NewDevice(keybag: keybag, secret: secret)
        } catch {
            secret.wipe()
            discard(deviceUUID, in: store)
            throw error
        }
    }

    /// What `discard` would remove of `deviceUUID` from `store`: the paths of a file
    /// store's secret and record that exist, or for a tpm2 store its NV index, if defined.
    public static func entries(of deviceUUID: String, in store: SecretStoreLocation) -> [String] {
        switch store {
        case .file(let directory):
            return [DeviceSecretStore.path(of: deviceUUID, in: directory),
                    DeviceRecordStore.statePath(of: deviceUUID, in: directory)].filter { access($0, F_OK) == 0 }
        case .tpm2(let tcti):
            let defined = (try? TPMSecretStore.readRecord(for: deviceUUID, tcti: tcti)) != nil
            return defined ? ["NV index of device \(deviceUUID) in \(store)"] : []
        }
    }

    /// Removes a device's entries from its store: one never finished (init failed after
    /// creating them, or was killed), or one `dpfs forget` is asked to forget.
    public static func discard(_ deviceUUID: String, in store: SecretStoreLocation) {
        switch store {
        case .file(let directory):
            // A write of the record that a kill cut short (init's, say) left its temporary.
            var now = timespec()
            clock_gettime(CLOCK_REALTIME_COARSE, &now)
            _ = try? DeviceRecordStore.removeStaleTemporaries(for: deviceUUID, in: store, openedAt: now)
            _ = DeviceSecretStore.path(of: deviceUUID, in: directory).withCString { unlink($0) }
            _ = DeviceRecordStore.statePath(of: deviceUUID, in: directory).withCString { unlink($0) }
        case .tpm2(let tcti):
            TPMSecretStore.discard(deviceUUID, tcti: tcti)
        }
        if let lock = RecordFileLock.path(of: deviceUUID, in: store) { _ = lock.withCString { unlink($0) } }
        DeviceUseLock.remove(of: deviceUUID, in: store)
    }
}

/// A random RFC 4122 version-4 UUID in lower-case text: a device's public name.
public enum UUIDText {
    /// Five groups of hex digits, 8-4-4-4-12, as `random()` makes them.
    public static func isValid(_ text: String) -> Bool {
        let groups = text.split(separator: "-", omittingEmptySubsequences: false)
        return groups.map(\.count) == [8, 4, 4, 4, 12]
            && groups.allSatisfy { $0.allSatisfy { $0.isASCII && $0.isHexDigit } }
    }

    static func random() -> String {
        var bytes = Sodium.randomBytes(16)
        bytes[6] = (bytes[6] & 0x0f) | 0x40
        bytes[8] = (bytes[8] & 0x3f) | 0x80
        let digits = Array("0123456789abcdef")
        let hex = String(bytes.flatMap { [digits[Int($0 >> 4)], digits[Int($0 & 15)]] })
        let parts = [hex.prefix(8), hex.dropFirst(8).prefix(4), hex.dropFirst(12).prefix(4), hex.dropFirst(16).prefix(4), hex.dropFirst(20)]
        return parts.map(String.init).joined(separator: "-")
    }
}
