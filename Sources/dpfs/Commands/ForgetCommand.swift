// dpfs forget: removes a device's entries from its secret store (its secret and its
// record in a file store; its NV index in a TPM). For a file store the device's data
// can never be decrypted again: for a device directory that was deleted (whose secret
// would otherwise stay behind in /var/lib/dpfs), or one to be destroyed for good. A
// tpm2 device's secret is sealed in its keybag: without its NV index it no longer
// mounts, but only its keybag's deletion (or a cleared TPM) destroys the secret.
import ArgumentParser
import DataProtection
import Foundation
import Glibc

struct Forget: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Remove a device's secret-store entries (a file store's secret: its data is gone for good).")

    @Argument(help: "The device's UUID (as its keybag and its secret store name it), or its directory.")
    var device: String
    @Option(help: ArgumentHelp(
        "With a UUID, the secret store to look in instead of the default ones: tpm2[:TCTI], file, or file:DIR, as init takes it.",
        valueName: "store")) var secretStore: String?

    func run() throws {
        let (uuid, stores) = try resolve()
        var removed: [String] = []
        for store in stores {
            // Held while the entries go, the use lock's file with them: a daemon or fsck
            // of any copy of the device holds it, and one started meanwhile is refused.
            removed += try Self.refusingUse(of: uuid) {
                try DeviceUseLock.whileNotInUse(uuid, in: store) { try Self.discard(uuid, in: store) }
            }
        }
        guard !removed.isEmpty else {
            throw CLIError("no entries of device \(uuid) in \(stores.map(\.description).joined(separator: " or "))")
        }
        print("forgot device \(uuid): removed \(removed.joined(separator: ", "))")
        if stores.contains(where: { if case .tpm2 = $0 { true } else { false } }) {
            // The sealed secret is in the keybag, not in the TPM: without its record the
            // device refuses to mount, but the TPM would still unseal it.
            print("note: a tpm2 device's secret is sealed in its keybag, which this TPM can still unseal; "
                  + "delete the device directory and its copies, or clear the TPM, to destroy it")
        }
    }

    /// The UUID and the stores to look in: a directory's own store, or for a bare UUID
    /// the one --secret-store names, else the default ones (this user's file store,
    /// and the TPM where there is one).
    private func resolve() throws -> (String, [SecretStoreLocation]) {
        let directory = DeviceDirectory(AbsolutePath.of(device))
        if directory.isInitialised {
            // The keybag names the store; another one named here would be a mistake.
            if secretStore != nil {
                throw CLIError("--secret-store goes with a device UUID: \(device) is a device directory, "
                               + "whose keybag names its store", status: .usage)
            }
            let lock: Int32
            do { lock = try directory.takeMountLock() } catch { throw CLIError(error, adding: "; unmount it first") }
            close(lock)
            // Nor through a copy of the directory while the device is mounted from another.
            // A store that cannot be used is the removal's to report, below.
            do { try DeviceUseLock.checkNotInUse(directory) } catch let error as DeviceError {
                throw CLIError(error, adding: "; unmount it first")
            } catch {}
            do {
                let entry = try KeybagFile.storeEntry(of: directory)
                return (entry.deviceUUID, [entry.store])
            } catch {
                throw CLIError(error)
            }
        }
        guard UUIDText.isValid(device) else {
            throw CLIError("\(device) is neither a device directory nor a device UUID")
        }
        if let secretStore {
            do { return (device.lowercased(), [try SecretStoreLocation(parsing: secretStore)]) } catch {
                throw CLIError(error)
            }
        }
        var stores = [try SecretStoreLocation(parsing: nil)]
        if access("/dev/tpmrm0", R_OK | W_OK) == 0 { stores.append(.tpm2(tcti: SecretStoreLocation.defaultTCTI)) }
        return (device.lowercased(), stores)
    }

    /// The entries of `uuid` in `store` it removed.
    private static func discard(_ uuid: String, in store: SecretStoreLocation) throws -> [String] {
        let entries = DeviceProvisioning.entries(of: uuid, in: store)
        guard !entries.isEmpty else { return [] }
        DeviceProvisioning.discard(uuid, in: store)
        let left = DeviceProvisioning.entries(of: uuid, in: store)
        guard left.isEmpty else { throw CLIError("cannot remove \(left.joined(separator: ", "))") }
        return entries
    }

    /// The refusal of a device in use, named by its UUID: the directory form refuses
    /// earlier, in `resolve`, in the words of a mount.
    private static func refusingUse<T>(of uuid: String, _ body: () throws -> T) throws -> T {
        do {
            return try body()
        } catch DeviceError.copyInUse(_, let holder, let mountpoint) {
            let user = switch (holder, mountpoint) {
            case (let holder?, let mountpoint?): "mounted from \(holder) on \(mountpoint)"
            case (let holder?, nil): "in use (mounted or checked by fsck) from \(holder)"
            case (nil, _): "in use (mounted or checked by fsck)"
            }
            throw CLIError("device \(uuid) is \(user): its entries cannot be removed; unmount it first")
        }
    }
}
