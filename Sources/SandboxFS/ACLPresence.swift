// Whether the device has ever held a POSIX ACL. Most never do, and on a mount only
// root reaches (no default_permissions, so the kernel neither caches nor enforces
// ACLs) every `ls -l` asks each file for one: a round trip per file, most of the
// requests of a listing. While no ACL was ever set, such a mount
// answers ACL reads as a filesystem without ACLs does (EOPNOTSUPP): coreutils then
// stops asking for the rest of the device, getfacl shows the mode, cp -a and rsync -A
// copy no ACL, and setfacl still sets one. A mount where the kernel checks permissions
// answers ENODATA instead (the kernel reads ACLs itself there, and must get "none").
//
// The fact lives in the device directory as the `no-acls` marker (dpfs(5)), made by
// init and removed, durably, before the first ACL that is more than the mode is
// stored: a crash between leaves no marker and an ACL-less tree, never the reverse.
// A device without the marker answers every ACL read from the backing node.
import DataProtection
import Glibc
import Synchronization
import SystemCalls

final class ACLPresence: Sendable {
    private let markerPath: String
    private let deviceRoot: String
    private let noneEver: Atomic<Bool>
    private let recording = Mutex<Void>(())

    init(_ directory: DeviceDirectory) {
        markerPath = directory.noACLsMarkerPath
        deviceRoot = directory.root
        noneEver = Atomic(access(directory.noACLsMarkerPath, F_OK) == 0)
    }

    /// True while no ACL was ever set on the device.
    var noneSet: Bool { noneEver.load(ordering: .acquiring) }

    /// Called before an ACL is stored: removes the marker unless the ACL (`attribute`
    /// with `value`) says no more than a mode does.
    func willSet(_ attribute: String, _ value: UnsafeRawBufferPointer) throws(Errno) {
        guard noneSet, !(attribute == SandboxFileSystem.accessACLAttribute && Self.isModeOnly(value)) else { return }
        try recording.withLock { (_) throws(Errno) in
            guard noneEver.load(ordering: .relaxed) else { return }
            if unlink(markerPath) != 0 && errno != ENOENT { throw Errno.current }
            let fd = try Errno.check(open(deviceRoot, O_RDONLY | O_DIRECTORY | O_CLOEXEC))
            defer { close(fd) }
            try Errno.check(fsync(fd))
            noneEver.store(false, ordering: .releasing)
        }
    }

    /// Whether an access ACL in the kernel's xattr form (a version word, then 8-byte
    /// entries of tag, permissions and id) holds only the owner, group and other
    /// entries: what cp -a and tar --acls set on every file, which ext4 turns into the
    /// mode and does not store.
    static func isModeOnly(_ value: UnsafeRawBufferPointer) -> Bool {
        let header = 4, entry = 8
        guard value.count == header + 3 * entry, value.load(as: UInt32.self).littleEndian == 2 else { return false }
        let userObject: UInt16 = 0x01, groupObject: UInt16 = 0x04, other: UInt16 = 0x20
        var tags: Set<UInt16> = []
        for index in 0..<3 {
            tags.insert(value.loadUnaligned(fromByteOffset: header + index * entry, as: UInt16.self).littleEndian)
        }
        return tags == [userObject, groupObject, other]
    }
}
