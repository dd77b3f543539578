// The kernel's list of mounts (/proc/self/mountinfo), as far as dpfs needs it: which
// filesystem is mounted on a path, from which device, with which super options.
// A directory can answer any extended attribute it likes; only this list says what
// is really mounted there and for whom (dpfs(5), "Control socket").
import Foundation
import Glibc

public struct MountEntry: Equatable {
    /// The st_dev of every node of the mount, as "major:minor".
    public let device: String
    /// The directory of the mounted filesystem shown at the mount point ("/" for its root).
    public let root: String
    public let mountPoint: String
    /// "fuse.dpfs" for a dpfs mount: FUSE's type with the subtype the daemon sets.
    public let fsType: String
    /// What was mounted: for FUSE, the fsname the daemon gave ("dpfs:DEVICE").
    public let source: String
    public let superOptions: [String]

    public static let dpfsType = "fuse.dpfs"

    /// The user a FUSE mount belongs to: the kernel records user_id=UID when it is
    /// mounted (fusermount3 puts the real uid of the mounting user there).
    public var fuseOwner: uid_t? {
        superOptions.first { $0.hasPrefix("user_id=") }.flatMap { uid_t($0.dropFirst("user_id=".count)) }
    }

    /// One line: ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTIONS [OPTIONAL...] - TYPE SOURCE SUPEROPTIONS.
    init?(line: Substring) {
        let fields = line.split(separator: " ", omittingEmptySubsequences: false)
        guard fields.count >= 10, let dash = fields[6...].firstIndex(of: "-"), dash + 3 < fields.count else { return nil }
        device = String(fields[2])
        root = MountEntry.unescape(fields[3])
        mountPoint = MountEntry.unescape(fields[4])
        fsType = MountEntry.unescape(fields[dash + 1])
        source = MountEntry.unescape(fields[dash + 2])
        superOptions = fields[dash + 3].split(separator: ",").map(String.init)
    }

    /// The kernel writes space, tab, newline and backslash in paths as \ooo (octal).
    static func unescape(_ field: Substring) -> String {
        var bytes: [UInt8] = []
        let source = Array(field.utf8)
        var index = 0
        while index < source.count {
            if source[index] == UInt8(ascii: "\\"), index + 3 < source.count,
               let value = UInt8(String(decoding: source[(index + 1)...(index + 3)], as: UTF8.self), radix: 8) {
                bytes.append(value)
                index += 4
            } else {
                bytes.append(source[index])
                index += 1
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}

public enum MountTable {
    /// The mounts this process sees, in mount order (a later entry covers an earlier one
    /// on the same mount point); none where the table cannot be read.
    public static func entries() -> [MountEntry] {
        read() ?? []
    }

    /// The mounts this process sees, or nil when the table cannot be read (no descriptor
    /// or memory to spare): which is not the same as an empty table.
    public static func read() -> [MountEntry]? {
        guard let text = ProcFile.read("/proc/self/mountinfo") else { return nil }
        return text.split(separator: "\n").compactMap { MountEntry(line: $0) }
    }

    /// The mount visible at `mountPoint` (an absolute path without symlinks), if any.
    public static func topmost(at mountPoint: String) -> MountEntry? {
        entries().last { $0.mountPoint == mountPoint }
    }

    /// The mount `path` (an absolute path without symlinks) is in: the one on the
    /// longest mount point that holds it, the last mounted there.
    public static func enclosing(_ path: String) -> MountEntry? {
        var found: MountEntry?
        for entry in entries() where entry.mountPoint.count >= (found?.mountPoint.count ?? 0) {
            let holds = entry.mountPoint == "/" || path == entry.mountPoint || path.hasPrefix(entry.mountPoint + "/")
            if holds { found = entry }
        }
        return found
    }

    /// The mount of device `device` ("major:minor") whose root is shown at `mountPoint`.
    public static func root(of device: String, at mountPoint: String) -> MountEntry? {
        entries().last { $0.device == device && $0.mountPoint == mountPoint && $0.root == "/" }
    }
}
