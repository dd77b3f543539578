// A device directory in a temporary folder, made the way `dpfs init` makes one, for
// every test target that needs a device: one definition, one KDF setting.
import DataProtection
import Foundation

public final class ProvisionedDevice {
    /// The cheapest Argon2id libsodium allows: unit tests exercise the logic, not the
    /// passcode's cost.
    public static func fastKDF() -> KDFParameters {
        var kdf = KDFParameters.standard()
        kdf.opsLimit = 1
        kdf.memLimit = 8192
        return kdf
    }

    public let directory: DeviceDirectory
    /// The file secret store's directory, beside the device directory (never inside it).
    public let secretStore: String

    public init(passcode: SecureBuffer?, eraseAfter: Int? = nil, defaultProtection: ProtectionClass = .untilFirstAuth,
                prefix: String = "dpfs-unit") throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("\(prefix)-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
        directory = DeviceDirectory(root)
        secretStore = root + "-secrets"
        var made = try DeviceProvisioning.create(store: .file(directory: secretStore), passcode: passcode,
                                                 defaultProtection: defaultProtection, eraseAfter: eraseAfter,
                                                 kdf: Self.fastKDF())
        try made.keybag.save(in: directory, deviceSecret: made.secret)
        made.secret.wipe()
    }

    /// A passcode or other secret in locked memory, from test text.
    public static func secret(_ text: String) -> SecureBuffer {
        Array(text.utf8).withUnsafeBytes { SecureBuffer(copying: $0) }
    }

    deinit {
        try? FileManager.default.removeItem(atPath: directory.root)
        try? FileManager.default.removeItem(atPath: secretStore)
    }
}
