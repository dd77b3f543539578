// dpfs protection get|set: the class of files and directories, through the same
// extended attribute ordinary tools use. Paths are used as the bytes they were given
// (RawArguments), for a name need not be UTF-8.
import ArgumentParser
import CLinux
import DataProtection
import DPFSProtocol
import Foundation
import Glibc

struct Protection: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Read or change the protection class of files and directories.",
        subcommands: [Get.self, Set.self])

    struct Get: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Print the class of each path.")
        @Argument(help: "Paths inside a dpfs mount.") var paths: [String]

        func run() throws {
            var failed = false
            let mounts = Protection.dpfsDevices()
            for path in RawArguments.trailing(paths) {
                if Protection.refuseOutsideMount(path, dpfsDevices: mounts) { failed = true; continue }
                var buffer = [UInt8](repeating: 0, count: 64)
                let n = getxattr(path.bytes, MountAttributes.protection, &buffer, buffer.count)
                if n < 0 {
                    failed = true
                    let error = errno
                    let reason = Protection.deathShown(at: path, by: error) ?? Protection.classless(path)
                        ?? (error == ENODATA || error == ENOTSUP ? "has no protection class (not in a dpfs mount?)"
                                                                 : String(cString: strerror(error)))
                    FileHandle.standardError.write(Data("Error: \(path.display): \(reason)\n".utf8))
                    continue
                }
                // Before the class, the path's own bytes: two names that show alike are
                // still two names to a script.
                let line = (paths.count == 1 ? [] : path.unterminated + Array(": ".utf8)) + buffer[0..<n] + [UInt8(ascii: "\n")]
                FileHandle.standardOutput.write(Data(line))
            }
            if failed { throw ExitCode.failure }
        }
    }

    struct Set: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Change the class of each path (a stronger class gives a file a new key and reseals its content).")
        @Argument(help: "\(ProtectionClass.validNames) (or an alias).") var protectionClass: String
        @Argument(help: "Paths inside a dpfs mount.") var paths: [String]

        func run() throws {
            let name = try ProtectionClass.named(onCommandLine: protectionClass).name
            var failed = false
            let mounts = Protection.dpfsDevices()
            for path in RawArguments.trailing(paths) {
                if Protection.refuseOutsideMount(path, dpfsDevices: mounts) { failed = true; continue }
                let rc = name.withCString { setxattr(path.bytes, MountAttributes.protection, $0, strlen($0), 0) }
                guard rc != 0 else { continue }
                failed = true
                let error = errno
                let reason = Protection.deathShown(at: path, by: error) ?? Protection.classless(path)
                    ?? (error == EPERM ? Self.unavailable(path, asked: name) : String(cString: strerror(error)))
                FileHandle.standardError.write(Data("Error: \(path.display): \(reason)\n".utf8))
            }
            if failed { throw ExitCode.failure }
        }

        /// EPERM's reason: no key to change with, or a raise a lock stopped after its
        /// first step, which leaves the file in the class asked for (dpfs(1)).
        static func unavailable(_ path: RawArgument, asked name: String) -> String {
            var buffer = [UInt8](repeating: 0, count: 64)
            let n = getxattr(path.bytes, MountAttributes.protection, &buffer, buffer.count)
            guard n > 0, String(decoding: buffer[0..<n], as: UTF8.self) == name else {
                return "the key of its class or of the new class is not available (device locked?)"
            }
            return "the file has class \(name) now, but the device locked before its content moved to the new key; "
                + "the move finishes at the file's first use after the unlock"
        }
    }

    /// Why `path` has no class when it is a node that cannot have one: a special file,
    /// or a symbolic link to one (the attribute calls follow links). The kernel refuses
    /// user.* attributes on such a node itself, with the errors a locked device or a
    /// path outside a mount gives, so a failed call asks this first. Nil for a regular
    /// file, a directory, or a path that cannot be looked at.
    static func classless(_ path: RawArgument) -> String? {
        var st = stat()
        guard lstat(path.bytes, &st) == 0 else { return nil }
        if let kind = specialKind(st.st_mode) { return "is a special file (\(kind)), which has no protection class" }
        guard st.st_mode & S_IFMT == S_IFLNK, stat(path.bytes, &st) == 0, let kind = specialKind(st.st_mode) else {
            return nil
        }
        return "is a symbolic link to a special file (\(kind)), which has no protection class"
    }

    /// The kind of a special file's `mode`; nil for a regular file, a directory or a
    /// symbolic link.
    private static func specialKind(_ mode: mode_t) -> String? {
        switch mode & S_IFMT {
        case S_IFIFO: return "FIFO"
        case S_IFSOCK: return "socket"
        case S_IFCHR: return "character device"
        case S_IFBLK: return "block device"
        default: return nil
        }
    }

    /// That the daemon of `path`'s mount has died, when a call on `path` failed with
    /// `code` as calls fail then (ECONNABORTED while it died, ENOTCONN after) and the
    /// mount shows it dead; else nil.
    static func deathShown(at path: RawArgument, by code: Int32) -> String? {
        guard DaemonDeath.isDeathErrno(code),
              let mount = DaemonDeath.deadMount(containing: AbsolutePath.of(path.display)) else { return nil }
        return ControlClientError.daemonDied(mount).description
    }

    /// The devices ("major:minor") of the dpfs mounts, read once per command: a
    /// thousand paths would otherwise read the mount table a thousand times.
    static func dpfsDevices() -> Swift.Set<String> {
        Swift.Set(MountTable.entries().filter { $0.fsType == MountEntry.dpfsType }.map(\.device))
    }

    /// Refuses `path`, saying so on stderr, if it is not a node of a dpfs mount (its
    /// device is none of `dpfsDevices`): the attribute would be written on a plain file
    /// and protect nothing. False when it is, or cannot be looked at (the call then says why).
    static func refuseOutsideMount(_ path: RawArgument, dpfsDevices: Swift.Set<String>) -> Bool {
        var st = stat()
        guard stat(path.bytes, &st) == 0 else { return false }
        if dpfsDevices.contains("\(dpfs_major(st.st_dev)):\(dpfs_minor(st.st_dev))") { return false }
        FileHandle.standardError.write(Data("Error: \(path.display): not in a dpfs mount\n".utf8))
        return true
    }
}
