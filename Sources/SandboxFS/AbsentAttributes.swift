// The attributes a node is known not to carry, so the questions asked of every node
// need no system call: ls -l asks each file for its POSIX ACL, the kernel asks a new
// file for its capability before its first write, and a create that must apply the
// caller's umask asks the directory for a default ACL. The backing tree is the
// daemon's alone, so one of these attributes appears only through a setxattr here or
// at a node's creation (inherited from a default ACL); what was seen absent stays
// absent until a setxattr of it.
//
// One word per inode: a change count above the bits, so an absence seen before a
// concurrent setxattr of the same node is not recorded after it.
import Synchronization

enum AbsentAttribute: UInt64 {
    case accessACL = 1, defaultACL = 2, capability = 4

    init?(_ attribute: String) {
        switch attribute {
        case "system.posix_acl_access": self = .accessACL
        case "system.posix_acl_default": self = .defaultACL
        case "security.capability": self = .capability
        default: return nil
        }
    }

    fileprivate static let bitCount: UInt64 = 8
}

extension Inode {
    func isKnownAbsent(_ attribute: AbsentAttribute) -> Bool {
        absentAttributes.load(ordering: .acquiring) & attribute.rawValue != 0
    }

    /// The change count to hand to `noteAbsent` once the backing node has answered.
    func attributeChanges() -> UInt64 {
        absentAttributes.load(ordering: .acquiring) >> AbsentAttribute.bitCount
    }

    /// Records that the backing node answered ENODATA for `attribute`, asked when
    /// the change count was `changes`; nothing if a change came in between.
    func noteAbsent(_ attribute: AbsentAttribute, seenAt changes: UInt64) {
        var current = absentAttributes.load(ordering: .relaxed)
        while current >> AbsentAttribute.bitCount == changes && current & attribute.rawValue == 0 {
            let (done, found) = absentAttributes.compareExchange(
                expected: current, desired: current | attribute.rawValue, ordering: .acquiringAndReleasing)
            if done { return }
            current = found
        }
    }

    /// Records a setxattr (`absent` false) or removexattr (true) of `attribute` that
    /// succeeded, and counts it as a change.
    func noteChanged(_ attribute: AbsentAttribute, absent: Bool) {
        var current = absentAttributes.load(ordering: .relaxed)
        while true {
            let count = (current >> AbsentAttribute.bitCount) &+ 1
            let bits = current & ((1 << AbsentAttribute.bitCount) - 1) & ~attribute.rawValue
            let desired = count << AbsentAttribute.bitCount | bits | (absent ? attribute.rawValue : 0)
            let (done, found) = absentAttributes.compareExchange(
                expected: current, desired: desired, ordering: .acquiringAndReleasing)
            if done { return }
            current = found
        }
    }
}
