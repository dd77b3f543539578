// dpfs init: a new device directory with its keybag, device secret, item store and
// the app sandbox layout (NewDeviceOptions makes it), made in a hidden directory and
// renamed into place whole (BuildDirectory): an init killed part-way leaves the
// directory as it was, not half a device that nothing will take.
import ArgumentParser
import DataProtection
import Foundation

struct Init: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Create a device directory: keybag, device secret, item store and sandbox.")

    @Argument(help: "A new or empty directory to hold the device.") var deviceDirectory: String
    @OptionGroup var options: NewDeviceOptions

    func run() throws {
        let directory = DeviceDirectory(deviceDirectory)
        let plan = try options.plan(for: directory.root)
        BuildDirectory.removeAbandoned(for: directory, purpose: "init")
        var madeOnTheWay = [(directory.root as NSString).deletingLastPathComponent]
        if case .file(let store) = plan.store { madeOnTheWay.append(store) }
        let missing = MissingDirectories(of: madeOnTheWay)
        do {
            try make(directory, plan: plan)
        } catch {
            missing.removeEmpty()
            throw error
        }
    }

    private func make(_ directory: DeviceDirectory, plan: NewDeviceOptions.Plan) throws {
        let given = try NewDeviceOptions.prepareTarget(directory.root)
        let passcode = try options.readPasscode()
        // Beside an absent directory, renamed to it, so that DEVICE_DIR exists only once
        // the device is whole; inside one it was given, moved up: that one stays the same
        // directory, wherever its parent lets nobody write, and keeps its mode (the
        // device's files are 0600).
        let building = try BuildDirectory(for: directory, purpose: "init", inside: given)
        do {
            let deviceUUID = try options.make(in: building.directory, plan: plan, passcode: passcode)
            do { try building.commit(as: directory, keepingMode: given) } catch {
                DeviceProvisioning.discard(deviceUUID, in: plan.store)
                throw error
            }
        } catch {
            building.discard()
            throw error
        }
        print("secret store: \(plan.store) (\(plan.storeNote))")
        print("initialised \(directory.root) (default class \(plan.defaultClass.name), passcode \(passcode == nil ? "none" : "set"))")
    }
}
