// A device directory in a temporary folder, made the way dpfs init makes one.
import DataProtection
import Foundation

final class TestDevice {
    let directory: DeviceDirectory
    let passcode: SecureBuffer?
    /// The file secret store's directory, beside the device directory (never inside it).
    let secretStore: String

    /// Fast KDF parameters: unit tests exercise the logic, not Argon2's cost.
    static let fastKDF = KDFParameters(opsLimit: 1, memLimit: 8192 * 1024, salt: Bytes(Sodium.randomBytes(16)))

    init(passcode text: String? = "1234", eraseAfter: Int? = nil, defaultProtection: ProtectionClass = .untilFirstAuth) throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("dpfs-unit-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
        directory = DeviceDirectory(root)
        passcode = text.map(TestDevice.secret)
        secretStore = root + "-secrets"
        var made = try DeviceProvisioning.create(store: .file(directory: secretStore), passcode: passcode,
                                                 defaultProtection: defaultProtection, eraseAfter: eraseAfter, kdf: Self.fastKDF)
        try made.keybag.save(in: directory, deviceSecret: made.secret)
        made.secret.wipe()
    }

    static func secret(_ text: String) -> SecureBuffer {
        Array(text.utf8).withUnsafeBytes { SecureBuffer(copying: $0) }
    }

    /// Boots the device; waits after failures are scaled by `delayScale` (none by default).
    func boot(gracePeriod: TimeInterval = 0, delayScale: Double = 0) throws -> LockStateManager {
        // Unit tests run from a debug build (swift test), which has the test hooks.
        try LockStateManager(directory: directory, gracePeriod: gracePeriod, testHooks: TestHooks(delayScale: delayScale))
    }

    deinit {
        try? FileManager.default.removeItem(atPath: directory.root)
        try? FileManager.default.removeItem(atPath: secretStore)
    }
}
