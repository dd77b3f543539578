// A kernel file handle (name_to_handle_at): names one backing inode, its generation
// included, without holding it open, so the inode table can close an entry's O_PATH
// descriptor and reopen the same inode later (open_by_handle_at), or learn that it is
// gone (ESTALE) and its number may belong to another inode now.
import BlockStore
import CLinux
import Glibc
import SystemCalls

struct KernelFileHandle: Equatable, Sendable {
    let type: Int32
    let bytes: [UInt8]

    /// The handle of the node `fd` (any descriptor), nil when its filesystem has none.
    init?(of fd: Int32) {
        var raw = dpfs_file_handle()
        guard dpfs_name_to_handle(fd, &raw) == 0 else { return nil }
        self.init(raw)
    }

    /// The handle of `name` in the directory `directoryFD` (a final symlink not
    /// followed); nil and errno when there is none.
    init?(at directoryFD: Int32, _ name: UnsafePointer<CChar>) {
        var raw = dpfs_file_handle()
        guard dpfs_name_to_handle_at(directoryFD, name, &raw) == 0 else { return nil }
        self.init(raw)
    }

    private init(_ raw: dpfs_file_handle) {
        var raw = raw
        type = raw.handle_type
        let count = Int(min(raw.handle_bytes, UInt32(DPFS_HANDLE_MAX)))
        bytes = withUnsafeBytes(of: &raw.f_handle) { Array($0.prefix(count)) }
    }

    /// The inode number inside the handle, where its type defines one: FILEID_INO32_GEN
    /// (ext4's and XFS's handles), a 32-bit number then the generation. nil for others.
    var inodeNumber: UInt64? {
        guard type == Self.ino32Generation, bytes.count == 8 else { return nil }
        return bytes.withUnsafeBytes { UInt64($0.loadUnaligned(as: UInt32.self)) }
    }

    /// FILEID_INO32_GEN (include/linux/exportfs.h).
    private static let ino32Generation: Int32 = 1

    /// A descriptor of the node (O_PATH unless `flags` say otherwise), opened on the
    /// filesystem of `mountFD`. Throws ESTALE when the inode is gone, EPERM without
    /// CAP_DAC_READ_SEARCH.
    func open(on mountFD: Int32, flags: Int32 = OpenFlag.path | O_CLOEXEC) throws(Errno) -> Int32 {
        var raw = dpfs_file_handle()
        raw.handle_type = type
        raw.handle_bytes = UInt32(bytes.count)
        withUnsafeMutableBytes(of: &raw.f_handle) { target in
            bytes.withUnsafeBytes { target.copyMemory(from: $0) }
        }
        return try Errno.check(dpfs_open_by_handle(mountFD, &raw, flags))
    }

    /// Whether this daemon can reopen nodes of the filesystem of `fd` (a directory) by
    /// handle: the filesystem makes handles, and the daemon may open them.
    static func supported(on fd: Int32) -> Bool {
        guard let handle = KernelFileHandle(of: fd), let reopened = try? handle.open(on: fd) else { return false }
        close(reopened)
        return true
    }
}
