// Items moving to another device (dpfs backup and restore): every item that may leave
// this one, with all its attributes, its dates and its secret; and such an item put
// into a new device as it was. ThisDeviceOnly items never leave and are never taken
// in, as in an encrypted iOS backup: their class keys are bound to the device.
import DataProtection
import DPFSProtocol
import Foundation
import GRDB

/// An app registered with the device, as a backup carries it.
public struct RegisteredApp: Sendable {
    public var bundleID: String
    /// The entitlements plist it was registered with; nil for a sandbox app named by
    /// bundle ID alone.
    public var entitlements: Data?
    public var isSandboxApp: Bool
}

/// Why the items could not be exported, with the OSStatus that says it.
public struct ItemExportError: Error, CustomStringConvertible {
    public let status: Int32
    public let description: String
}

extension ItemStore {
    /// The accessibilities whose items may leave the device.
    public static let migratable = Accessibility.allCases.filter { !$0.isThisDeviceOnly }

    /// Lends `body` every migratable item in turn (in the order they were added): its
    /// attributes by request name plus `created` and `modified` (Unix seconds), and its
    /// secret in locked memory, freed when `body` returns. Fails with
    /// errSecInteractionNotAllowed unless every migratable class is available, so an
    /// export is whole or nothing.
    public func exportMigratableItems(_ body: (_ attributes: [String: String], _ data: UnsafeRawBufferPointer) throws -> Void) throws {
        do {
            try exportItems(body)
        } catch let error as SecError {
            throw ItemExportError(status: error.status, description: error.reason ?? SecStatus.describe(error.status))
        }
    }

    private func exportItems(_ body: (_ attributes: [String: String], _ data: UnsafeRawBufferPointer) throws -> Void) throws {
        for accessibility in Self.migratable where !isAvailable(accessibility) { throw ItemCrypto.unavailable(accessibility) }
        let names = Self.migratable.map(\.rawValue)
        let items = try pool.read { db in
            try Row.fetchAll(db, sql: "SELECT \(StoredItem.columns), secret FROM items WHERE accessible IN ("
                                 + Array(repeating: "?", count: names.count).joined(separator: ", ") + ") ORDER BY id",
                             arguments: StatementArguments(names)).map(StoredItem.init(row:))
        }
        for item in items {
            let record = try record(of: item)
            guard Self.mayLeave(record) else { continue }
            var attributes = StoredItem.attributes(of: record, accessibleName: item.columns.accessibleName)
            attributes["creationDate"] = nil
            attributes["modificationDate"] = nil
            attributes["created"] = String(record.created)
            attributes["modified"] = String(record.modified)
            try crypto.withSecret(of: item) { try body(attributes, $0) }
        }
    }

    /// Adds an item exported by `exportMigratableItems` (of any app: the caller is the
    /// device's owner), keeping its group, accessibility and dates. Never throws: a
    /// failure is an OSStatus, errSecDuplicateItem for an item already there.
    public func importItem(_ attributes: [String: String], data: UnsafeRawBufferPointer) -> KeychainResponse {
        do {
            var attributes = attributes
            guard let created = attributes.removeValue(forKey: "created").flatMap(Double.init),
                  let modified = attributes.removeValue(forKey: "modified").flatMap(Double.init) else {
                throw SecError(SecStatus.param, "an imported item needs its created and modified dates")
            }
            try Self.checkDataSize(count: data.count)
            let (text, dataAttributes, textAttributes) = try BlobAttributes.split(attributes)
            try ItemSizeLimits.check(text, data: dataAttributes, text: textAttributes)
            let parsed = try ParsedAttributes(text, data: dataAttributes, text: textAttributes)
            guard let itemClass = parsed.itemClass, let group = parsed.accessGroup, let accessibility = parsed.accessible,
                  let synchronizable = parsed.synchronizable, synchronizable != .any else {
                throw SecError(SecStatus.param, "an imported item names its class, group, accessibility and synchronizable")
            }
            guard !accessibility.isThisDeviceOnly else {
                throw SecError(SecStatus.param, "\(accessibility.rawValue) items never move between devices")
            }
            try Self.checkSynchronizable(synchronizable == .yes, accessibility)
            guard isAvailable(accessibility) else { throw ItemCrypto.unavailable(accessibility) }
            let identity = ItemIdentity(itemClass: itemClass, given: parsed.keys, accessGroup: group,
                                        synchronizable: synchronizable == .yes, dataValued: parsed.dataValued)
            let accessControl = try parsed.accessControl.map { try bind($0, made: false) }
            let record = ItemRecord(identity: identity, label: parsed.label, publicKey: parsed.publicKey,
                                    created: created, modified: modified, accessControl: accessControl,
                                    descriptive: parsed.descriptive, dataValued: parsed.sealedDataValued,
                                    textValued: parsed.textValued)
            guard Self.mayLeave(record) else {
                throw SecError(SecStatus.param, "Secure Enclave keys and .biometryCurrentSet items never move between devices")
            }
            let columns = RowColumns(identity, label: record.label, labelIsData: record.labelIsData,
                                     accessibility: accessibility, keys: keys)
            _ = try commit { db in try insert(record, columns, secret: data, accessibility: accessibility, db) }
            return KeychainResponse(status: SecStatus.success)
        } catch let error as SecError {
            return KeychainResponse(status: error.status, message: error.reason)
        } catch {
            return KeychainResponse(status: SecStatus.io, message: "the item store failed: \(error)")
        }
    }

    /// Whether an item of a migratable class may leave the device: not a Secure Enclave
    /// key (its key is this device's alone) nor an item bound to this device's biometric
    /// enrollment (.biometryCurrentSet: invalid under any other), as on iOS.
    static func mayLeave(_ record: ItemRecord) -> Bool {
        record.identity.keys[.tokenID] != SecureEnclaveKeys.tokenID
            && !(record.accessControl?.flags.contains(.biometryCurrentSet) ?? false)
    }

    /// Every registered app, the sandbox's first.
    public func registeredApps() throws -> [RegisteredApp] {
        try pool.read { db in
            try Row.fetchAll(db, sql: "SELECT bundleID, entitlements, isSandboxApp FROM apps ORDER BY isSandboxApp DESC, bundleID")
                .compactMap { row in
                    guard let bundleID = String.fromDatabaseValue(row["bundleID"]) else { return nil }
                    return RegisteredApp(bundleID: bundleID, entitlements: Data.fromDatabaseValue(row["entitlements"]),
                                         isSandboxApp: Bool.fromDatabaseValue(row["isSandboxApp"]) ?? false)
                }
        }
    }
}
