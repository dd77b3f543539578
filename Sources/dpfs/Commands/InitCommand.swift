// dpfs init: a new device directory with its keybag, device secret, item store and
// the app sandbox layout (NewDeviceOptions makes it).
import ArgumentParser
import DataProtection
import Foundation
import Glibc

struct Init: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Create a device directory: keybag, device secret, item store and sandbox.")

    @Argument(help: "A new or empty directory to hold the device.") var deviceDirectory: String
    @OptionGroup var options: NewDeviceOptions

    func run() throws {
        let directory = DeviceDirectory(deviceDirectory)
        let plan = try options.plan(for: directory.root)
        let made = try NewDeviceOptions.prepareEmptyDirectory(directory.root)
        // A failed init leaves no trace: the failure paths empty the directory, and
        // one this command made goes too.
        var initialised = false
        defer { if made && !initialised { rmdir(directory.root) } }
        let passcode = try options.readPasscode()
        _ = try options.make(in: directory, plan: plan, passcode: passcode)
        initialised = true
        print("secret store: \(plan.store) (\(plan.storeNote))")
        print("initialised \(directory.root) (default class \(plan.defaultClass.name), passcode \(passcode == nil ? "none" : "set"))")
    }
}
