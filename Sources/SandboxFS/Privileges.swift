// What a write, a truncation or an fallocate takes from a file, as a local filesystem
// does: the set-user-ID bit, and set-group-ID when the group may execute, unless the
// caller has CAP_FSETID; and a file capability (security.capability) whoever writes.
// The kernel leaves this to us once the handshake has taken FUSE_HANDLE_KILLPRIV_V2,
// and says in each request whether the caller has CAP_FSETID (KernelChannel.swift).
//
// A file is checked once per open entry and again only after something through the
// mount could have given it such a privilege (a chmod adding set-ID bits, a setxattr of
// security.capability): the epoch counts those, each entry keeps the epoch it last
// found clean, so an ordinary write costs one atomic load.
import CLinux
import Glibc
import Synchronization

/// Counts grants of set-ID bits and file capabilities through the mount.
final class PrivilegeEpoch: Sendable {
    let value = Atomic<UInt64>(1)

    /// Notes that a file may have gained a privilege a write must remove.
    func granted() { value.add(1, ordering: .releasing) }
}

extension SandboxFileSystem {
    static let capabilityAttribute = "security.capability"

    /// Drops what a write, truncation or fallocate by `caller` removes from `file` on `inode`.
    func dropPrivileges(_ file: OpenFile, _ inode: Inode, _ caller: Caller) {
        guard KernelChannel.negotiated.load(ordering: .relaxed) else { return }
        let epoch = privileges.value.load(ordering: .acquiring)
        if file.privilegesCleanAt.load(ordering: .relaxed) == epoch { return }
        var st = stat()
        guard fstat(file.fd, &st) == 0 else { return }
        var kill = st.st_mode & S_ISUID
        if st.st_mode & (S_ISGID | S_IXGRP) == S_ISGID | S_IXGRP { kill |= S_ISGID }
        var clean = true
        if kill != 0 {
            if !KernelChannel.requestDropsPrivileges(callerUID: caller.uid) {
                clean = false  // kept for this caller, checked again for the next writer
            } else if fchmod(file.fd, st.st_mode & 0o7777 & ~kill) == 0 {
                // The kernel would show the old mode until its attributes expire (one
                // kernel inode for every name).
                kernel.invalidateAttributes(inode)
            } else {
                clean = false
            }
        }
        if !inode.isKnownAbsent(.capability) {
            let changes = inode.attributeChanges()
            if fremovexattr(file.fd, Self.capabilityAttribute) == 0 {
                inode.noteChanged(.capability, absent: true)
            } else if errno == ENODATA {
                inode.noteAbsent(.capability, seenAt: changes)
            } else if errno != EOPNOTSUPP {
                clean = false
            }
        }
        if clean { file.privilegesCleanAt.store(epoch, ordering: .relaxed) }
    }
}
