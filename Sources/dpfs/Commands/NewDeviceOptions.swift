// What a new device is made with, for dpfs init and dpfs restore alike: the options
// and the making (keybag, device secret in its store, sandbox tree, item store).
import ArgumentParser
import DataProtection
import Foundation
import CLinux
import Glibc
import ItemStore

struct NewDeviceOptions: ParsableArguments {
    @Option(help: "Read the passcode from the first line of this file.") var passcodeFile: String?
    @Flag(help: "Create a device without a passcode: every class is always available.") var noPasscode = false
    @Option(help: "Bundle ID of the sandbox's app.") var app: String?
    @Option(help: "Apple-style entitlements plist of the sandbox's app.") var entitlements: String?
    @Option(help: "Class new files take by default (\(ProtectionClass.validNames)).")
    var defaultProtection: String?
    // Numbers taken as they come, dash and all (.unconditional): "-1" read as an option
    // was "a missing value", not the option's own refusal of a negative number.
    @Option(parsing: .unconditional, help: "Erase the keys after this many consecutive failed passcodes (iOS: 10).")
    var eraseAfter: Int?
    @Option(help: ArgumentHelp(
        "Where the device secret lives, outside the device directory: tpm2[:TCTI] (sealed to a TPM 2.0; the default where /dev/tpmrm0 answers), file (the default elsewhere: /var/lib/dpfs for root, else $XDG_STATE_HOME/dpfs), or file:DIR.",
        valueName: "store")) var secretStore: String?
    @Flag(help: "Make the file:DIR secret store's directory if it does not exist.") var create = false

    func validate() throws {
        if noPasscode && passcodeFile != nil { throw ValidationError("--no-passcode and --passcode-file exclude each other") }
        if let eraseAfter, eraseAfter < 1 { throw ValidationError("--erase-after needs a positive number") }
    }

    /// The sandbox's app when neither --app nor --entitlements names one (a restore's:
    /// the backup's), and the class it carries for the sandbox default.
    struct Defaults {
        var appBundleID: String?
        var entitlements: Data?
        var protection: ProtectionClass = .untilFirstAuth
    }

    /// What the device will be made with, settled before anything is made.
    struct Plan {
        var store: SecretStoreLocation
        var storeNote: String
        var defaultClass: ProtectionClass
        var defaults: Defaults
    }

    /// Checks what can be checked before anything is made. `root`: the directory the
    /// device ends up in (the secret store must lie outside it).
    func plan(for root: String, defaults: Defaults = Defaults()) throws -> Plan {
        try checkClassName()
        let (store, note) = try chooseStore()
        try checkStoreDirectoryExists(store)
        try checkEntitlements()
        if case .file(let secrets) = store, secrets == root || secrets.hasPrefix(root + "/") {
            throw CLIError("the secret store must lie outside the device directory (a copy of it must not hold the secret)")
        }
        return Plan(store: store, storeNote: note, defaultClass: try resolveDefaultClass(defaults.protection), defaults: defaults)
    }

    /// Refuses an unknown --default-protection, a usage error; `restore` asks before it
    /// reads the backup.
    func checkClassName() throws {
        if let defaultProtection { _ = try ProtectionClass.named(onCommandLine: defaultProtection) }
    }

    /// The passcode the new device gets (nil with --no-passcode).
    func readPasscode() throws -> SecureBuffer? {
        noPasscode ? nil : try PasscodeSource.readNew(file: passcodeFile)
    }

    /// Makes the device in `directory`, a build's (BuildDirectory), which must exist and
    /// be empty; its UUID. On failure the directory is left empty and the secret store
    /// holds nothing of it. Killed part-way, it leaves the build naming the device's
    /// secret-store entry (BuildEntry), for the next command to forget.
    func make(in directory: DeviceDirectory, plan: Plan, passcode: SecureBuffer?) throws -> String {
        let (store, defaultClass, defaults) = (plan.store, plan.defaultClass, plan.defaults)
        let device: DeviceProvisioning.NewDevice
        do {
            let deviceUUID = DeviceProvisioning.newDeviceUUID()
            try BuildEntry.note(deviceUUID, in: store, at: directory)
            device = try DeviceProvisioning.create(store: store, passcode: passcode, defaultProtection: defaultClass,
                                                   eraseAfter: eraseAfter, deviceUUID: deviceUUID)
        } catch {
            Self.removeContents(of: directory.root)
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
            if app == nil && entitlements == nil {
                try ItemStore.initialize(path: directory.itemStorePath, appBundleID: defaults.appBundleID,
                                         entitlements: defaults.entitlements)
            } else {
                try ItemStore.initialize(path: directory.itemStorePath, appBundleID: app,
                                         entitlementsPlist: entitlements.map(AbsolutePath.of))
            }
            // The keybag last: its presence is what marks a device as initialised.
            try keybag.save(in: directory, deviceSecret: device.secret)
            try BuildEntry.removeNote(from: directory)
        } catch {
            Self.removeContents(of: directory.root)
            DeviceProvisioning.discard(device.keybag.deviceUUID, in: store)
            throw CLIError("init failed: \(error)")
        }
        return device.keybag.deviceUUID
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

    /// A `file:DIR` the user named must exist unless --create asks for it: a mistyped
    /// path would otherwise put the device secret, without which nothing of the device
    /// opens, where nobody will look for it (or back it up). The default store's
    /// directory is made as needed.
    private func checkStoreDirectoryExists(_ store: SecretStoreLocation) throws {
        guard secretStore != nil, !create, case .file(let directory) = store else { return }
        var isDirectory: ObjCBool = false
        if FileManager.default.fileExists(atPath: directory, isDirectory: &isDirectory) {
            guard isDirectory.boolValue else { throw CLIError("the secret store \(directory) is not a directory") }
            return
        }
        throw CLIError("the secret store directory \(directory) does not exist; make it, or add --create")
    }

    /// The sandbox's app's entitlements, refused before anything is made.
    private func checkEntitlements() throws {
        guard let entitlements else { return }
        guard let data = FileManager.default.contents(atPath: entitlements) else {
            throw CLIError("cannot read entitlements plist \(entitlements)")
        }
        do { _ = try Entitlements(plist: data, bundleID: app) } catch {
            throw CLIError("\(entitlements): \(error)\(unsignedHint(data))")
        }
    }

    /// Xcode adds application-identifier to the entitlements only when it signs the app,
    /// so a project's entitlements file has none: --app and the plist's team stand for it.
    private func unsignedHint(_ data: Data) -> String {
        guard let plist = try? PropertyListSerialization.propertyList(from: data, format: nil) as? [String: Any],
              plist["application-identifier"] == nil else { return "" }
        var missing: [String] = []
        if app == nil { missing.append("the bundle ID with --app") }
        if plist["com.apple.developer.team-identifier"] == nil {
            missing.append("the team as com.apple.developer.team-identifier in the plist")
        }
        guard !missing.isEmpty else { return "" }
        return "; a project's entitlements file gets it when Xcode signs the app: give "
            + missing.joined(separator: " and ")
    }

    /// --default-protection, else the entitlements' default-data-protection, else `fallback`.
    private func resolveDefaultClass(_ fallback: ProtectionClass) throws -> ProtectionClass {
        if let defaultProtection, let parsed = ProtectionClass(name: defaultProtection) { return parsed }
        guard let entitlements else { return fallback }
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

    /// Checks that `path` is an empty directory (true), or is absent (false), its parent
    /// then made if missing. Not `path` itself: the device's build becomes it whole, and
    /// an init killed before that leaves nothing there.
    static func prepareTarget(_ path: String) throws -> Bool {
        var isDirectory: ObjCBool = false
        if FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) {
            guard isDirectory.boolValue else { throw CLIError("\(path) exists and is not a directory") }
            let contents = (try? FileManager.default.contentsOfDirectory(atPath: path)) ?? ["?"]
            guard contents.isEmpty else { throw CLIError(DeviceError.notEmpty(path).description) }
            return true
        }
        let parent = (path as NSString).deletingLastPathComponent
        guard !FileManager.default.fileExists(atPath: parent) else { return false }
        do {
            try FileManager.default.createDirectory(atPath: parent, withIntermediateDirectories: true,
                                                    attributes: [.posixPermissions: 0o700])
        } catch {
            throw CLIError("cannot create \(parent): \(String(cString: strerror(errno)))")
        }
        return false
    }

    static func removeContents(of path: String) {
        for name in (try? FileManager.default.contentsOfDirectory(atPath: path)) ?? [] {
            try? FileManager.default.removeItem(atPath: path + "/" + name)
        }
    }
}
