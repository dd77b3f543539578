// A device without a passcode whose item store is made and open: what each sync test
// drives its engine, or an exchange by hand, over.
import DataProtection
import ItemStore
import TestSupport

final class StoreDevice {
    let provisioned: ProvisionedDevice
    let device: LockStateManager
    let items: ItemStore
    var directory: DeviceDirectory { provisioned.directory }

    init(prefix: String) throws {
        provisioned = try ProvisionedDevice(passcode: nil, prefix: prefix)
        let directory = provisioned.directory
        try ItemStore.initialize(path: directory.itemStorePath, appBundleID: nil, entitlementsPlist: nil)
        device = try LockStateManager(directory: directory, gracePeriod: 0)
        items = try ItemStore(path: directory.itemStorePath, device: device)
    }
}
