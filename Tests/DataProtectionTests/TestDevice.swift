// A device directory made as `dpfs init` makes one (TestSupport), booted on demand.
import DataProtection
import Foundation
import TestSupport

final class TestDevice {
    private let provisioned: ProvisionedDevice
    var directory: DeviceDirectory { provisioned.directory }
    let passcode: SecureBuffer?
    var secretStore: String { provisioned.secretStore }

    static var fastKDF: KDFParameters { ProvisionedDevice.fastKDF() }

    init(passcode text: String? = "1234", eraseAfter: Int? = nil, defaultProtection: ProtectionClass = .untilFirstAuth) throws {
        passcode = text.map(TestDevice.secret)
        provisioned = try ProvisionedDevice(passcode: passcode, eraseAfter: eraseAfter, defaultProtection: defaultProtection)
    }

    static func secret(_ text: String) -> SecureBuffer { ProvisionedDevice.secret(text) }

    /// Boots the device; waits after failures are scaled by `delayScale` (none by default).
    func boot(gracePeriod: TimeInterval = 0, delayScale: Double = 0) throws -> LockStateManager {
        // Unit tests run from a debug build (swift test), which has the test hooks.
        try LockStateManager(directory: directory, gracePeriod: gracePeriod, testHooks: TestHooks(delayScale: delayScale))
    }
}
