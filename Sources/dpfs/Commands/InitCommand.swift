// dpfs init: a new device directory with its keybag, device secret, item store and
// the app sandbox layout.
import ArgumentParser
import DataProtection
import Foundation
import CLinux
import Glibc
import ItemStore

struct Init: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Create a device directory: keybag, device secret, item store and sandbox.")

    @Argument(help: "A new or empty directory to hold the device.") var deviceDirectory: String
    @Option(help: "Read the passcode from the first line of this file.") var passcodeFile: String?
    @Flag(help: "Create a device without a passcode: every class is always available.") var noPasscode = false
    @Option(help: "Bundle ID of the sandbox's app.") var app: String?
    @Option(help: "Apple-style entitlements plist of the sandbox's app.") var entitlements: String?
    @Option(help: "Class new files take by default (none, complete, completeUnlessOpen, untilFirstAuth, completeWhenUserInactive).")
    var defaultProtection: String?
    @Option(help: "Erase the keys after this many consecutive failed passcodes (iOS: 10).") var eraseAfter: Int?
    @Option(help: ArgumentHelp(
        "Where the device secret lives, outside the device directory: tpm2[:TCTI] (sealed to a TPM 2.0; the default where /dev/tpmrm0 answers), file (the default elsewhere: /var/lib/dpfs for root, else $XDG_STATE_HOME/dpfs), or file:DIR.",
        valueName: "store")) var secretStore: String?

    func validate() throws {
        if noPasscode && passcodeFile != nil { throw ValidationError("--no-passcode and --passcode-file exclude each other") }
        if let eraseAfter, eraseAfter < 1 { throw ValidationError("--erase-after needs a positive number") }
    }

    /// The store `--secret-store` names; without it the TPM where /dev/tpmrm0 answers
    /// (a guess then needs this machine's TPM, and counts against its lockout), else
    /// the default file store. With why, for the line `init` prints.
    private func chooseStore() throws -> (SecretStoreLocation, String) {
        if let secretStore {
            do { return (try SecretStoreLocation(parsing: secretStore), "as asked") } catch {
                throw CLIError(error)
            }
        }
        let tpm = SecretStoreLocation.tpm2(tcti: SecretStoreLocation.defaultTCTI)
        if access("/dev/tpmrm0", R_OK | W_OK) == 0 && TPMSecretStore.isUsable(tcti: SecretStoreLocation.defaultTCTI) {
            return (tpm, "sealed to this machine's TPM: no passcode can be tried anywhere else")
        }
        let file = try SecretStoreLocation(parsing: nil)
        return (file, "no usable TPM at /dev/tpmrm0: whoever copies this directory and that one "
                + "can try passcodes offline; keep them apart")
    }

    func run() throws {
        if let defaultProtection, ProtectionClass(name: defaultProtection) == nil {
            throw CLIError("unknown protection class '\(defaultProtection)'; valid: \(ProtectionClass.validNames)")
        }
        let directory = DeviceDirectory(deviceDirectory)
        let (store, storeNote) = try chooseStore()
        if case .file(let secrets) = store, secrets == directory.root || secrets.hasPrefix(directory.root + "/") {
            throw CLIError("the secret store must lie outside the device directory (a copy of it must not hold the secret)")
        }
        let made = try prepareEmptyDirectory(directory.root)
        // A failed init leaves no trace: the failure paths below empty the directory,
        // and one this command made goes too.
        var initialised = false
        defer { if made && !initialised { rmdir(directory.root) } }
        let defaultClass = try resolveDefaultClass()
        let passcode = noPasscode ? nil : try PasscodeSource.readNew(file: passcodeFile)
        let device: DeviceProvisioning.NewDevice
        do {
            device = try DeviceProvisioning.create(store: store, passcode: passcode, defaultProtection: defaultClass,
                                                   eraseAfter: eraseAfter)
        } catch {
            removeContents(of: directory.root)
            throw CLIError("init failed: \(error)")
        }
        defer { device.secret.wipe() }
        do {
            var keybag = device.keybag
            let metadataKey = MetadataKey.derive(from: device.secret)
            defer { metadataKey.wipe() }
            try SandboxTree.create(in: directory, defaultClass: defaultClass, metadataKey: metadataKey,
                                   names: NameCipher(deviceSecret: device.secret))
            try directory.markNoACLs()
            try ItemStore.initialize(path: directory.itemStorePath, appBundleID: app,
                                     entitlementsPlist: entitlements.map(absolutePath))
            // The keybag last: its presence is what marks a device as initialised.
            try keybag.save(in: directory, deviceSecret: device.secret)
        } catch {
            removeContents(of: directory.root)
            DeviceProvisioning.discard(device.keybag.deviceUUID, in: store)
            throw CLIError("init failed: \(error)")
        }
        initialised = true
        print("secret store: \(store) (\(storeNote))")
        print("initialised \(directory.root) (default class \(defaultClass.name), passcode \(passcode == nil ? "none" : "set"))")
    }

    private func resolveDefaultClass() throws -> ProtectionClass {
        if let defaultProtection, let parsed = ProtectionClass(name: defaultProtection) { return parsed }
        guard let entitlements else { return .untilFirstAuth }
        guard let data = FileManager.default.contents(atPath: entitlements),
              let plist = try? PropertyListSerialization.propertyList(from: data, format: nil) as? [String: Any] else {
            throw CLIError("cannot read entitlements plist \(entitlements)")
        }
        guard let value = plist["com.apple.developer.default-data-protection"] as? String else { return .untilFirstAuth }
        guard let parsed = ProtectionClass(name: value) else {
            throw CLIError("entitlements plist \(entitlements): unknown default-data-protection '\(value)'")
        }
        return parsed
    }

    /// Checks that `path` is an empty directory, or makes it; true if it made it.
    private func prepareEmptyDirectory(_ path: String) throws -> Bool {
        var isDirectory: ObjCBool = false
        if FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) {
            guard isDirectory.boolValue else { throw CLIError("\(path) exists and is not a directory") }
            let contents = (try? FileManager.default.contentsOfDirectory(atPath: path)) ?? ["?"]
            guard contents.isEmpty else { throw CLIError(DeviceError.notEmpty(path).description) }
            return false
        } else {
            do {
                try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true,
                                                        attributes: [.posixPermissions: 0o700])
            } catch {
                throw CLIError("cannot create \(path): \(String(cString: strerror(errno)))")
            }
            return true
        }
    }

    private func removeContents(of path: String) {
        for name in (try? FileManager.default.contentsOfDirectory(atPath: path)) ?? [] {
            try? FileManager.default.removeItem(atPath: path + "/" + name)
        }
    }
}
