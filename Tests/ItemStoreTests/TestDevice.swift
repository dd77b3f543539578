// A simulated device in a temporary directory with a real keybag, lock-state manager
// and item store, for driving the store through lock states.
import DPFSProtocol
import DataProtection
import Foundation
import TestSupport
@testable import ItemStore

final class TestDevice {
    static let passcode = "1234"

    private let provisioned: ProvisionedDevice
    var root: String { provisioned.directory.root }
    var directory: DeviceDirectory { provisioned.directory }
    var secretStore: String { provisioned.secretStore }
    let device: LockStateManager
    private(set) var store: ItemStore

    /// A device with passcode 1234 (unlocked unless `unlocked` is false) or none.
    init(passcode: Bool = true, unlocked: Bool = true, sandboxApp: String? = nil,
         entitlements: String? = nil, eraseAfter: Int? = nil) throws {
        provisioned = try ProvisionedDevice(passcode: passcode ? Self.secret(Self.passcode) : nil,
                                            eraseAfter: eraseAfter, prefix: "dpfs-itemstore")
        let directory = provisioned.directory
        var plistPath: String?
        if let entitlements {
            plistPath = directory.root + "/sandbox.entitlements"
            try Data(entitlements.utf8).write(to: URL(fileURLWithPath: directory.root + "/sandbox.entitlements"))
        }
        try ItemStore.initialize(path: directory.itemStorePath, appBundleID: sandboxApp, entitlementsPlist: plistPath)
        device = try LockStateManager(directory: directory, gracePeriod: 0)
        store = try ItemStore(path: directory.itemStorePath, device: device)
        if passcode && unlocked { try unlock() }
    }

    static func secret(_ text: String) -> SecureBuffer { ProvisionedDevice.secret(text) }

    func unlock() throws { try device.unlock(passcode: Self.secret(Self.passcode)) }
    func lock() { device.lock(now: true) }
    func restart() { device.restart() }

    /// Closes and reopens the store, as a daemon restart would.
    func reopenStore() throws {
        store = try ItemStore(path: directory.itemStorePath, device: device)
    }

    func registerApp(_ plist: String) throws -> String {
        try store.registerApp(entitlements: Data(plist.utf8))
    }

    // MARK: Calls

    @discardableResult
    func add(_ attributes: [String: String], data: String? = "secret", app: String? = nil,
             returning: String? = nil, limit: String? = nil) -> KeychainResponse {
        store.perform(KeychainRequest(operation: .add, app: app, attributes: attributes,
                                      data: data.map { Data($0.utf8) }, limit: limit, returning: returning))
    }

    func find(_ attributes: [String: String], app: String? = nil, limit: String? = nil,
              returning: String? = nil) -> KeychainResponse {
        store.perform(KeychainRequest(operation: .find, app: app, attributes: attributes, limit: limit,
                                      returning: returning))
    }

    func update(_ attributes: [String: String], to changes: [String: String] = [:], newData: String? = nil,
                app: String? = nil, limit: String? = nil, returning: String? = nil) -> KeychainResponse {
        store.perform(KeychainRequest(operation: .update, app: app, attributes: attributes,
                                      updateAttributes: changes, newData: newData.map { Data($0.utf8) },
                                      limit: limit, returning: returning))
    }

    func delete(_ attributes: [String: String], app: String? = nil) -> KeychainResponse {
        store.perform(KeychainRequest(operation: .delete, app: app, attributes: attributes))
    }

    /// The secret of the one matching item as text, or nil when the find fails.
    func secret(_ attributes: [String: String], app: String? = nil) -> String? {
        let response = find(attributes, app: app)
        guard response.status == 0, let data = response.items.first?.data else { return nil }
        return String(decoding: data, as: UTF8.self)
    }

    /// Raw SQL on the store's database, as an attacker with the device directory could.
    /// Taken for the store's own write: the tests that tamper are of what a damaged row
    /// does to its item, not of the watch on the files (GenerationTests has that).
    func tamper(_ sql: String) throws {
        try store.pool.write { try $0.execute(sql: sql) }
        store.ledger.files.noteOwnWrite()
    }

    /// Every byte of the database, its WAL and its shared-memory index.
    func databaseFiles() -> Data {
        ["", "-wal", "-shm"].reduce(into: Data()) { all, suffix in
            all += FileManager.default.contents(atPath: directory.itemStorePath + suffix) ?? Data()
        }
    }
}

/// An Apple-style entitlements plist, as codesign prints it.
func entitlementsPlist(appID: String, groups: [String], appGroups: [String] = [],
                       protection: String? = nil) -> String {
    var body = "<key>application-identifier</key><string>\(appID)</string>\n"
    if !groups.isEmpty {
        body += "<key>keychain-access-groups</key><array>"
            + groups.map { "<string>\($0)</string>" }.joined() + "</array>\n"
    }
    if !appGroups.isEmpty {
        body += "<key>com.apple.security.application-groups</key><array>"
            + appGroups.map { "<string>\($0)</string>" }.joined() + "</array>\n"
    }
    if let protection {
        body += "<key>com.apple.developer.default-data-protection</key><string>\(protection)</string>\n"
    }
    return """
        <?xml version="1.0" encoding="UTF-8"?>
        <!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
        <plist version="1.0">
        <dict>
        \(body)</dict>
        </plist>
        """
}

extension Data {
    func contains(_ needle: Data) -> Bool { range(of: needle) != nil }
}
