// Where a name the kernel sends meets the backing tree: one function maps a plaintext
// name in a directory to its backing name (lookup, readdir's reverse, create, rename
// all go through here). Identity for now; encrypted names replace this one place.
//
// Reserved: the reapers' directory (NodeReaper.swift) sits at the sandbox root under a
// name beginning with ".fuse_hidden", the prefix libfuse's path API used for files
// unlinked while open. Such names are never listed or found, and no node may take one.
import Glibc

extension SandboxFileSystem {
    static let reservedNamePrefix = ".fuse_hidden"

    /// Whether a name is reserved (never listed, found, made or renamed to).
    @inline(__always)
    static func isReserved(_ name: UnsafePointer<CChar>) -> Bool {
        name.pointee == 0x2e && strncmp(name, reservedNamePrefix, 12) == 0
    }

    /// The backing name of `name` in `directory`; nil for a reserved name.
    @inline(__always)
    func backingName(_ name: UnsafePointer<CChar>, in directory: Inode) -> UnsafePointer<CChar>? {
        Self.isReserved(name) ? nil : name
    }

    /// The plaintext name of a backing directory entry; nil when it is not shown.
    @inline(__always)
    func plaintextName(_ backing: UnsafePointer<CChar>, in directory: Inode) -> UnsafePointer<CChar>? {
        Self.isReserved(backing) ? nil : backing
    }
}
