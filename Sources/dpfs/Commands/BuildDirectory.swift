// Where init and restore make a new device: a hidden directory, made DEVICE_DIR only
// once the device is whole, so that a command killed part-way (SIGKILL, a power cut)
// leaves DEVICE_DIR as it found it, and a second try finds it empty.
import CLinux
import DataProtection
import Foundation
import Glibc
import SandboxFS
import SystemCalls

/// The hidden directory where the new device is made, then made DEVICE_DIR: beside it,
/// renamed to it (or over it, empty) once complete. A mount point (an empty filesystem
/// mounted for the device, as `init` takes one) cannot be renamed over: the device is
/// then made inside it and its entries moved up one by one, the keybag last, for the
/// keybag is what makes a directory a device.
///
/// The command holds an flock on it while it builds: one killed part-way releases it,
/// and the next init or restore of the same DEVICE_DIR removes what it left
/// (`removeAbandoned`), the device's secret-store entry, the entries it had moved up
/// and the temporary mount point beside it (TemporaryMount) included, never a build
/// still under way.
struct BuildDirectory {
    let directory: DeviceDirectory
    /// Whether it lies inside DEVICE_DIR, a mount point, rather than beside it.
    let inside: Bool
    private let lock: Int32

    /// `purpose` names the hidden directory: `.NAME.PURPOSE-XXXXXX` beside, `.PURPOSE-XXXXXX`
    /// inside. Inside when DEVICE_DIR is a mount point, or when `inside` asks for it: a
    /// directory someone else made keeps its inode, owner, group, ACLs and attributes.
    init(for target: DeviceDirectory, purpose: String, inside asked: Bool = false) throws {
        inside = asked || Self.isMountPoint(target.root)
        let parent = (target.root as NSString).deletingLastPathComponent
        let name = (target.root as NSString).lastPathComponent
        var isDirectory: ObjCBool = false
        if !inside {
            guard FileManager.default.fileExists(atPath: parent, isDirectory: &isDirectory) else {
                throw CLIError("\(parent) does not exist; make it first")
            }
            guard isDirectory.boolValue else { throw CLIError("\(parent) is not a directory") }
        }
        let pattern = inside ? "\(target.root)/.\(purpose)-XXXXXX" : "\(parent)/.\(name).\(purpose)-XXXXXX"
        let (path, fd) = try Self.makeLocked(pattern, where: "\(inside ? "in" : "beside") \(target.root)")
        directory = DeviceDirectory(path)
        lock = fd
    }

    /// A new directory from the mkdtemp `pattern`, open and flocked. Made, then locked:
    /// in between, another command's clean-up (removeAbandoned, LeftoverBuild) may take
    /// it for an abandoned build and remove it, so once locked it is the build only if
    /// its name still leads to it; else another is made.
    private static func makeLocked(_ pattern: String, where place: String) throws -> (String, Int32) {
        for _ in 0..<8 {
            var template = Array(pattern.utf8CString)
            guard mkdtemp(&template) != nil else {
                throw CLIError("cannot make a directory \(place): \(String(cString: strerror(errno)))")
            }
            let path = String(decoding: template.dropLast().map { UInt8(bitPattern: $0) }, as: UTF8.self)
            let fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
            guard fd >= 0 else {
                let reason = String(cString: strerror(errno))
                rmdir(path)
                throw CLIError("cannot open the directory \(path): \(reason)")
            }
            if flock(fd, LOCK_EX) == 0, leads(path, to: fd) { return (path, fd) }
            close(fd)
        }
        throw CLIError("cannot make a directory \(place): another command's clean-up kept removing it")
    }

    /// Whether `path` still names the directory open as `fd`.
    private static func leads(_ path: String, to fd: Int32) -> Bool {
        var opened = stat()
        var named = stat()
        return fstat(fd, &opened) == 0 && lstat(path, &named) == 0
            && opened.st_dev == named.st_dev && opened.st_ino == named.st_ino
    }

    /// Removes the hidden directories of `purpose` that a command killed part-way left
    /// inside or beside `target`: those whose flock no command holds, and no daemon
    /// still serves. Each one's secret-store entry goes first (BuildEntry), then what it
    /// had moved up into a `target` it had not made a device (MoveUpList), then the
    /// build, which names both: a kill on the way leaves them for the next command.
    static func removeAbandoned(for target: DeviceDirectory, purpose: String) {
        let parent = (target.root as NSString).deletingLastPathComponent
        let name = (target.root as NSString).lastPathComponent
        let places = [(target.root, ".\(purpose)-"), (parent, ".\(name).\(purpose)-")]
        for (place, prefix) in places {
            let entries = (try? FileManager.default.contentsOfDirectory(atPath: place)) ?? []
            for entry in entries where entry.hasPrefix(prefix) && entry.count == prefix.count + 6 {
                let path = place + "/" + entry
                let fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
                guard fd >= 0 else { continue }
                defer { close(fd) }
                guard flock(fd, LOCK_EX | LOCK_NB) == 0, !isServed(fd, DeviceDirectory(path)),
                      isBuildOfOurs(fd, DeviceDirectory(path)) else { continue }
                let forgotten = BuildEntry.forgetAbandoned(fd, at: path, sparing: target)
                let movedUp = place == target.root ? MoveUpList.removeMoved(fd, from: target) : []
                removeMountPoint(path + TemporaryMount.mountSuffix)
                try? FileManager.default.removeItem(atPath: path)
                if !forgotten.isEmpty || !movedUp.isEmpty {
                    FileHandle.standardError.write(Data(("note: removed the device a killed \(purpose) left half-made in "
                        + "\(path)" + (movedUp.isEmpty ? "" : " and \(target.root) (\(movedUp.joined(separator: ", ")))")
                        + (forgotten.isEmpty ? "" : ", and its secret-store entries \(forgotten.joined(separator: ", "))")
                        + "\n").utf8))
                }
            }
        }
    }

    /// Whether the directory open as `build`, named as a build is, was made by a command
    /// of ours: this user's, writable by nobody else, and empty (killed before its first
    /// write) or holding what a build holds from its first write on (the secret-store
    /// note, then the keybag, then the list of what moves up). A directory of the
    /// user's that only happens to be named so is left alone, whatever it holds.
    private static func isBuildOfOurs(_ build: Int32, _ directory: DeviceDirectory) -> Bool {
        guard BuildEntry.isOwnBuild(build) else { return false }
        let marks = [BuildEntry.noteName, (directory.keybagPath as NSString).lastPathComponent, MoveUpList.name]
        if marks.contains(where: { faccessat(build, $0, F_OK, AT_SYMLINK_NOFOLLOW) == 0 }) { return true }
        return directoryNames(of: build)?.isEmpty == true
    }

    /// Removes the temporary mount point of an abandoned build, taking down first the
    /// mount left on it if its daemon died with no unmount (killed outright too).
    private static func removeMountPoint(_ path: String) {
        guard let parent = realpath((path as NSString).deletingLastPathComponent, nil) else { return }
        let resolved = String(cString: parent) + "/" + (path as NSString).lastPathComponent
        free(parent)
        if DaemonWatch.showsDeadMount(at: resolved) { try? DeadMount.takeDown(at: resolved) }
        rmdir(resolved)
    }

    /// Whether a daemon holds the mount lock of the build open as `build` (`directory`):
    /// a killed restore's temporary mount, in its last moments. Its files and its
    /// entries are not taken from under it; the next command finds the build abandoned.
    private static func isServed(_ build: Int32, _ directory: DeviceDirectory) -> Bool {
        let lock = (directory.lockPath as NSString).lastPathComponent
        let fd = openat(build, lock, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        return flock(fd, LOCK_EX | LOCK_NB) != 0
    }

    /// Whether `path` is the root of a mount (its mount is not its parent's): a bind
    /// mount of a directory of the same filesystem is one too.
    static func isMountPoint(_ path: String) -> Bool {
        var own: UInt64 = 0
        var parents: UInt64 = 0
        guard dpfs_mount_id(path, &own) >= 0, dpfs_mount_id(path + "/..", &parents) >= 0 else { return false }
        return own != parents
    }

    /// Makes the finished device DEVICE_DIR (which is absent or empty). Moved up into
    /// it, the device takes the mode of a new device directory, or with `keepingMode`
    /// keeps the one DEVICE_DIR has.
    func commit(as target: DeviceDirectory, keepingMode: Bool = false) throws {
        defer { close(lock) }
        try syncContents()
        if inside { return try moveUp(into: target, keepingMode: keepingMode) }
        guard rename(directory.root, target.root) == 0 else {
            throw CLIError("cannot move the new device to \(target.root): \(String(cString: strerror(errno)))")
        }
        try? AtomicFile.syncDirectory(of: target.root)
    }

    /// Puts on disk all that was written into the build: restore writes the files
    /// through a mount whose daemon syncs only its metadata, so without this a power cut
    /// soon after the commit would leave a device whose files are empty or cut short.
    /// One syncfs of the build's filesystem, not a walk of its files.
    private func syncContents() throws {
        guard syncfs(lock) == 0 else {
            throw CLIError("cannot sync the new device in \(directory.root): \(String(cString: strerror(errno)))")
        }
    }

    /// Moves each entry up into `target`, the keybag last and after a sync, so that a
    /// crash on the way leaves no directory that looks like a device, and a list of
    /// them (MoveUpList) first, by which the next command removes what a kill left. A
    /// failure moves back what was moved, for `discard` to remove with the rest.
    private func moveUp(into target: DeviceDirectory, keepingMode: Bool) throws {
        let keybag = (target.keybagPath as NSString).lastPathComponent
        let names: [String]
        do {
            names = try FileManager.default.contentsOfDirectory(atPath: directory.root)
                .filter { $0 != keybag && $0 != MoveUpList.name }
        } catch {
            throw CLIError("cannot list the new device in \(directory.root): \(error)")
        }
        var given = stat()
        guard stat(target.root, &given) == 0 else {
            throw CLIError("cannot read \(target.root): \(String(cString: strerror(errno)))")
        }
        do { try MoveUpList.write(names + [keybag], of: directory, targetMode: given.st_mode) } catch {
            throw CLIError("cannot note the new device's entries in \(directory.root): \(error)")
        }
        // The mode a device directory made by rename has (mkdtemp's 0700), not the
        // mount's (a tmpfs is 1777): where it is made does not change what it is. Set
        // before the first move (the list holds the mode to give back), not after the
        // last: once the keybag has moved the device is whole, and nothing sets it again.
        var own = stat()
        if !keepingMode, stat(directory.root, &own) == 0 { chmod(target.root, own.st_mode & 0o7777) }
        var moved: [String] = []
        for name in names + [keybag] {
            // syncDirectory(of: a path) syncs the directory holding it: the target.
            if name == keybag { try? AtomicFile.syncDirectory(of: target.keybagPath) }
            guard Self.moveWithoutReplacing(directory.root + "/" + name, to: target.root + "/" + name) else {
                let reason = String(cString: strerror(errno))
                for name in moved { _ = rename(target.root + "/" + name, directory.root + "/" + name) }
                chmod(target.root, given.st_mode & 0o7777)
                throw CLIError("cannot move the new device's \(name) into \(target.root): \(reason)")
            }
            moved.append(name)
        }
        MoveUpList.remove(from: directory)
        rmdir(directory.root)
        try? AtomicFile.syncDirectory(of: target.keybagPath)
    }

    /// rename(2) that fails (EEXIST) rather than replace what someone put in the target
    /// meanwhile; a plain rename where the filesystem has no RENAME_NOREPLACE.
    private static func moveWithoutReplacing(_ source: String, to destination: String) -> Bool {
        if renameat2(AT_FDCWD, source, AT_FDCWD, destination, RenameFlag.noReplace) == 0 { return true }
        return errno == EINVAL && rename(source, destination) == 0
    }

    func discard() {
        try? FileManager.default.removeItem(atPath: directory.root)
        close(lock)
    }
}
