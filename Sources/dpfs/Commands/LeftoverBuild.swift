// The hidden build directory (BuildDirectory) that an init or restore killed after its
// keybag moved up into DEVICE_DIR, and before it removed the build, leaves inside the
// finished device. No next init or restore of that directory comes to remove it (it is
// a device now), so `mount` and `fsck` do, after the mount lock and their refusals.
import DataProtection
import Foundation
import Glibc
import SystemCalls

enum LeftoverBuild {
    /// The commands whose build may lie inside DEVICE_DIR: `.PURPOSE-XXXXXX`.
    static let purposes = ["init", "restore"]

    /// Removes from `device` (a device: it holds a keybag) each build a killed command
    /// left there once the device was whole; the paths removed. Only a build that
    /// proves to be one at its end is: its name, this user's and writable by nobody
    /// else, no command holding its flock, and holding nothing but the list of what it
    /// moved up (MoveUpList, naming the keybag) or nothing at all. The list goes by
    /// name, the directory by rmdir, which takes no directory with anything in it: a
    /// file a user put there stays, and so does the build of a command under way (it
    /// holds the flock from the moment the build is made, BuildDirectory).
    static func remove(from device: DeviceDirectory) -> [String] {
        guard device.isInitialised else { return [] }
        let parent = open(device.root, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard parent >= 0 else { return [] }
        defer { close(parent) }
        let keybag = (device.keybagPath as NSString).lastPathComponent
        var removed: [String] = []
        for name in directoryNames(of: parent) ?? [] where isBuildName(name) {
            let build = openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
            guard build >= 0 else { continue }
            defer { close(build) }
            guard flock(build, LOCK_EX | LOCK_NB) == 0, BuildEntry.isOwnBuild(build),
                  let contents = directoryNames(of: build), contents.allSatisfy({ $0 == MoveUpList.name }) else { continue }
            if !contents.isEmpty {
                guard MoveUpList.names(in: build)?.contains(keybag) == true,
                      unlinkat(build, MoveUpList.name, 0) == 0 else { continue }
            }
            guard isSameNode(build, as: name, in: parent), unlinkat(parent, name, AT_REMOVEDIR) == 0 else { continue }
            removed.append(device.root + "/" + name)
        }
        if !removed.isEmpty { fsync(parent) }
        return removed
    }

    /// `.PURPOSE-` and the six letters or digits mkdtemp puts for XXXXXX.
    static func isBuildName(_ name: String) -> Bool {
        purposes.contains { purpose in
            let prefix = ".\(purpose)-"
            guard name.hasPrefix(prefix) else { return false }
            let suffix = name.utf8.dropFirst(prefix.utf8.count)
            return suffix.count == 6 && suffix.allSatisfy { (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0)
                || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains($0) || (UInt8(ascii: "a")...UInt8(ascii: "z")).contains($0) }
        }
    }

    /// Whether `name` in `parent` is still the directory open as `build`.
    private static func isSameNode(_ build: Int32, as name: String, in parent: Int32) -> Bool {
        var opened = stat()
        var named = stat()
        return fstat(build, &opened) == 0 && fstatat(parent, name, &named, AT_SYMLINK_NOFOLLOW) == 0
            && opened.st_dev == named.st_dev && opened.st_ino == named.st_ino
    }
}
