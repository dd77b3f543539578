// What a build inside DEVICE_DIR (BuildDirectory, for a mount point or a directory it
// was given) moves up into it, noted in the build before the first move: a command
// killed while moving leaves some entries in DEVICE_DIR and the rest, the keybag among
// them, in the build. The next init or restore removes from DEVICE_DIR the entries the
// list names, each only while it is still the same file (name and inode), so that a
// file someone put there since is never taken for the build's.
import DataProtection
import Foundation
import Glibc

enum MoveUpList {
    static let name = "moving-up.json"

    private struct List: Codable {
        struct Entry: Codable {
            var name: String
            var inode: UInt64
        }
        /// DEVICE_DIR's permission bits before the move gave it a device directory's.
        var mode: UInt32
        var entries: [Entry]
    }

    /// Notes in `build`, durably, its entries `names`, about to move into a DEVICE_DIR
    /// whose mode is `mode`.
    static func write(_ names: [String], of build: DeviceDirectory, targetMode mode: mode_t) throws {
        var entries: [List.Entry] = []
        for entry in names {
            var info = stat()
            guard lstat(build.root + "/" + entry, &info) == 0 else { throw SystemError("stat", build.root + "/" + entry) }
            entries.append(List.Entry(name: entry, inode: UInt64(info.st_ino)))
        }
        let path = build.root + "/" + name
        let bytes = try [UInt8](JSONEncoder().encode(List(mode: UInt32(mode & 0o7777), entries: entries)))
        // Synced before the first move: a list cut short is one whose entries never moved.
        try BuildEntry.createSynced(bytes, at: path)
    }

    /// Removes the list once every entry has moved up.
    static func remove(from build: DeviceDirectory) {
        unlink(build.root + "/" + name)
    }

    /// Removes from `target` what the abandoned build open as `build` had moved up into
    /// it, and gives `target` back its mode; nothing when `target` holds a keybag (the
    /// move was complete: it is a device) or the build is not one of this user's that
    /// nobody else can write into. The names it removed.
    static func removeMoved(_ build: Int32, from target: DeviceDirectory) -> [String] {
        guard !target.isInitialised, BuildEntry.isOwnBuild(build), let bytes = BuildEntry.read(name, in: build),
              let list = try? JSONDecoder().decode(List.self, from: Data(bytes)) else { return [] }
        var buildInfo = stat()
        let directory = open(target.root, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard directory >= 0 else { return [] }
        defer { close(directory) }
        guard fstat(build, &buildInfo) == 0 else { return [] }
        var removed: [String] = []
        for entry in list.entries where isPlainName(entry.name) {
            var info = stat()
            guard fstatat(directory, entry.name, &info, AT_SYMLINK_NOFOLLOW) == 0, UInt64(info.st_ino) == entry.inode,
                  info.st_dev == buildInfo.st_dev, info.st_uid == geteuid() else { continue }
            if (try? FileManager.default.removeItem(atPath: target.root + "/" + entry.name)) != nil {
                removed.append(entry.name)
            }
        }
        fchmod(directory, mode_t(list.mode & 0o7777))
        try? AtomicFile.syncDirectory(of: target.keybagPath)
        return removed
    }

    /// The names the list in the build open as `build` holds; nil when it has none or
    /// it does not read as one, or the build is not one of this user's that nobody else
    /// can write into.
    static func names(in build: Int32) -> [String]? {
        guard BuildEntry.isOwnBuild(build), let bytes = BuildEntry.read(name, in: build),
              let list = try? JSONDecoder().decode(List.self, from: Data(bytes)) else { return nil }
        return list.entries.map(\.name)
    }

    /// A name of an entry of the directory itself: no path, no `.` or `..`.
    private static func isPlainName(_ name: String) -> Bool {
        !name.isEmpty && name != "." && name != ".." && !name.contains("/") && !name.contains("\0")
    }
}
