// POSIX ACLs and security labels, as a local filesystem has them.
//
// ACLs: where the kernel checks permissions (default_permissions: allow_other,
// allow_root, or a mount owner other than root; MountSession), the session takes
// FUSE_CAP_POSIX_ACL (LowLevelOperations.configure), so the kernel reads a node's ACL
// (system.posix_acl_access, _default), keeps it with the inode and enforces it. The
// kernel drops that copy at every readdirplus or lookup that refreshes the inode, so
// ls -l still costs one request per listed file (two per directory). On a device that
// never held an ACL, a mount without those checks answers ACL reads as a filesystem
// without ACLs does, and ls -l asks once per listing (ACLPresence.swift).
// The ACLs live on the backing nodes, where ext4 keeps mode and ACL in sync: a chmod
// sets the mask, a setfacl sets the group bits, and a node made in a directory with a
// default ACL inherits it. The kernel drops its copy when it sets an ACL or a mode
// itself; the daemon tells it too (Attributes.swift) when an ACL changes.
//
// The kernel leaves the caller's umask to the filesystem (FUSE_CAP_DONT_MASK): ext4
// ignores the umask where a default ACL applies and the daemon makes nodes with umask
// 0, so creationMode applies the caller's umask exactly where the parent has no
// default ACL.
//
// Security labels (security.selinux, security.SMACK64*, security.apparmor, …: every
// security.* name but security.capability) are not kept: no security module on the host
// labels a FUSE mount's files from them. Get, set and remove answer EOPNOTSUPP and the
// list leaves them out, as a filesystem without label support does. coreutils' ls -l
// asks lgetxattr(security.selinux) per file until one answer says "not supported", then
// remembers that for the device: one request per listing instead of one per file.
import CFuse
import CLinux
import Glibc
import SystemCalls

extension SandboxFileSystem {
    static let accessACLAttribute = "system.posix_acl_access"
    static let defaultACLAttribute = "system.posix_acl_default"

    static func isACL(_ attribute: String) -> Bool {
        attribute == accessACLAttribute || attribute == defaultACLAttribute
    }

    /// Whether `attribute` is a security label dpfs does not keep.
    static func isUnkeptLabel(_ attribute: String) -> Bool {
        attribute.hasPrefix("security.") && attribute != capabilityAttribute
    }

    /// A NUL-separated attribute list without the labels dpfs does not keep.
    static func withoutUnkeptLabels(_ names: ArraySlice<CChar>) -> [CChar] {
        var kept: [CChar] = []
        kept.reserveCapacity(names.count)
        for name in names.split(separator: 0) {
            let text = String(decoding: name.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            if isUnkeptLabel(text) { continue }
            kept += name
            kept.append(0)
        }
        return kept
    }

    /// The mode to make a node with in `parentID` for a create, mkdir or mknod that
    /// asked for `mode`: the caller's umask applied unless the parent has a default ACL
    /// (then ext4 applies the ACL instead, as it would for a local caller). Applying the
    /// umask again to a mode the kernel masked already changes nothing.
    func creationMode(_ req: fuse_req_t?, _ parentID: fuse_ino_t, _ mode: mode_t) -> mode_t {
        guard let context = fuse_req_ctx(req) else { return mode }
        let mask = context.pointee.umask & 0o777
        // Asked even where the umask would change nothing: what it learns lets the
        // new node be known to carry no ACL (noteMadeBare).
        return hasDefaultACL(node(parentID)) ? mode : mode & ~mask
    }

    /// Whether `directory` carries a default ACL; its absence is asked of the backing
    /// node once and then remembered, so a tree being made asks once per directory.
    func hasDefaultACL(_ directory: Inode) -> Bool {
        if acls.noneSet || directory.isKnownAbsent(.defaultACL) { return false }
        let changes = directory.attributeChanges()
        do throws(Errno) {
            let size = try systemCall(onPathOf: directory) { CLinux.getxattr($0, Self.defaultACLAttribute, nil, 0) }
            return size > 0
        } catch {
            if error.rawValue == ENODATA { directory.noteAbsent(.defaultACL, seenAt: changes) }
            return false
        }
    }

    /// Records that `node`, just made in `parent` by this daemon, carries no ACL when
    /// the parent is known to pass none on (creationMode asked it): ls -l's question
    /// for each file of a tree just extracted is then answered without a system call.
    func noteMadeBare(_ node: Inode, in parent: Inode) {
        guard parent.isKnownAbsent(.defaultACL) else { return }
        node.noteAbsent(.accessACL, seenAt: 0)
        if node.isDirectory { node.noteAbsent(.defaultACL, seenAt: 0) }
    }
}
