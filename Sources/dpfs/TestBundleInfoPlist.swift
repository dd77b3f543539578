// The Info.plist beside a test bundle that `dpfs test` runs, which makes the app's ID the
// bundle's Bundle.main.bundleIdentifier, as a simulator's host app does. Foundation on
// Linux takes the main bundle to be the directory of the executable (/proc/self/exe,
// links resolved) and reads the Info.plist there, whatever the case of its name. A plist
// there that dpfs did not write (it lacks `marker`) is the developer's, and stays as it is.
import DataProtection
import Foundation
import Glibc

enum TestBundleInfoPlist {
    static let marker = "DPFSGeneratedFor"
    private static let name = "Info.plist"

    /// Gives the test bundle `executable` the bundle ID `bundleID`. A bundle it cannot
    /// give one still runs, with a warning: its tests that need no bundle ID can pass.
    static func provide(for executable: String, bundleID: String) {
        guard let resolved = realpath(executable, nil) else { return }  // the run reports a missing program
        let directory = (String(cString: resolved) as NSString).deletingLastPathComponent
        free(resolved)
        let path = directory + "/" + name
        do {
            guard try needsWriting(path, in: directory, bundleID: bundleID) else { return }
            let plist: [String: String] = ["CFBundleIdentifier": bundleID, marker: bundleID]
            let data = try PropertyListSerialization.data(fromPropertyList: plist, format: .xml, options: 0)
            try AtomicFile.write([UInt8](data), to: path, mode: 0o644)
        } catch {
            FileHandle.standardError.write(Data(("warning: cannot write \(path) for the tests: \(error); "
                + "Bundle.main.bundleIdentifier is not \(bundleID) in them\n").utf8))
        }
    }

    /// Whether the directory has no Info.plist of any case, or only one dpfs wrote for another app.
    private static func needsWriting(_ path: String, in directory: String, bundleID: String) throws -> Bool {
        let plists = try FileManager.default.contentsOfDirectory(atPath: directory).filter { $0.lowercased() == name.lowercased() }
        if plists.isEmpty { return true }
        guard plists == [name], let data = FileManager.default.contents(atPath: path),
              let plist = try? PropertyListSerialization.propertyList(from: data, format: nil) as? [String: Any],
              plist[marker] != nil else { return false }
        return plist["CFBundleIdentifier"] as? String != bundleID
    }
}
