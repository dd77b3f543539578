// The Info.plist beside a test bundle that `dpfs test` runs, which makes the app's ID the
// bundle's Bundle.main.bundleIdentifier, as a simulator's host app does. Foundation on
// Linux takes the main bundle to be the directory of the executable (/proc/self/exe,
// links resolved) and reads the Info.plist there, whatever the case of its name. A plist
// there that dpfs did not write (it lacks `marker`) is the developer's, and stays as it is.
import DataProtection
import Foundation
import Glibc
import SystemCalls

enum TestBundleInfoPlist {
    static let marker = "DPFSGeneratedFor"
    private static let name = "Info.plist"

    /// Gives the test bundle `executable` the bundle ID `bundleID`. A bundle it cannot
    /// give one still runs, with a warning: its tests that need no bundle ID can pass.
    /// The file stays for later runs, as SwiftPM's own files in the build directory do.
    static func provide(for executable: String, bundleID: String) {
        guard let resolved = realpath(executable, nil) else { return }  // the run reports a missing program
        let directory = (String(cString: resolved) as NSString).deletingLastPathComponent
        free(resolved)
        let path = directory + "/" + name
        do {
            guard try needsWriting(path, in: directory, bundleID: bundleID) else { return }
            let plist: [String: String] = ["CFBundleIdentifier": bundleID, marker: bundleID]
            let data = try PropertyListSerialization.data(fromPropertyList: plist, format: .xml, options: 0)
            try write(data, to: path)
        } catch {
            FileHandle.standardError.write(Data(("warning: cannot write \(path) for the tests: \(error); "
                + "Bundle.main.bundleIdentifier is not \(bundleID) in them\n").utf8))
        }
    }

    /// Whether the directory, the caller's own, has no Info.plist of any case, or only a
    /// regular file dpfs wrote for another app. Nothing is followed or read that another
    /// hand could have put there to make this process read a pipe or a device.
    private static func needsWriting(_ path: String, in directory: String, bundleID: String) throws -> Bool {
        var info = stat()
        guard lstat(directory, &info) == 0, info.st_uid == geteuid() else {
            throw CLIError("\(directory) is not a directory of this user")
        }
        let plists = try FileManager.default.contentsOfDirectory(atPath: directory).filter { $0.lowercased() == name.lowercased() }
        if plists.isEmpty { return true }
        guard plists == [name], let data = readRegularFile(path),
              let plist = try? PropertyListSerialization.propertyList(from: data, format: nil) as? [String: Any],
              plist[marker] != nil else { return false }
        return plist["CFBundleIdentifier"] as? String != bundleID
    }

    /// The file's bytes when it is a regular file of at most 64 KiB, not a link.
    private static func readRegularFile(_ path: String) -> Data? {
        let fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0, info.st_mode & S_IFMT == S_IFREG, info.st_size <= 65_536 else { return nil }
        return FileHandle(fileDescriptor: fd, closeOnDealloc: false).readDataToEndOfFile()
    }

    /// Replaces `path` with `data` through a new file of its own (O_EXCL: never one a
    /// link planted in the directory names), renamed over it.
    private static func write(_ data: Data, to path: String) throws {
        var template = Array((path + ".dpfs-XXXXXX").utf8CString)
        let fd = mkstemp(&template)
        guard fd >= 0 else { throw SystemError("create", path + ".dpfs-XXXXXX") }
        let temporary = String(decoding: template.dropLast().map { UInt8(bitPattern: $0) }, as: UTF8.self)
        var written = fchmod(fd, 0o644) == 0
        data.withUnsafeBytes { bytes in
            written = written && (try? pwriteAll(fd, UnsafeRawBufferPointer(bytes), at: 0)) != nil
        }
        close(fd)
        guard written, rename(temporary, path) == 0 else {
            let failure = SystemError("write", path)
            unlink(temporary)
            throw failure
        }
    }
}
