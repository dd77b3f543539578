// The status of a node together with its birth time, through statx (CLinux's
// dpfs_stat_birth): a birth time names one life of an inode number.
import CLinux
import Glibc

/// When an inode was born (statx's btime): fixed for the inode's life.
public struct FileBirth: Equatable, Sendable {
    public let seconds: Int64
    public let nanoseconds: UInt32

    public init(seconds: Int64, nanoseconds: UInt32) {
        self.seconds = seconds
        self.nanoseconds = nanoseconds
    }
}

/// fstatat(directoryFD, name, &st, flags | AT_SYMLINK_NOFOLLOW), with the node's birth
/// time where its filesystem keeps one (nil where it does not).
public func statWithBirth(_ directoryFD: Int32, _ name: UnsafePointer<CChar>, flags: Int32 = 0,
                          _ st: inout stat) throws(Errno) -> FileBirth? {
    var seconds: Int64 = 0
    var nanoseconds: UInt32 = 0
    switch dpfs_stat_birth(directoryFD, name, flags, &st, &seconds, &nanoseconds) {
    case -1: throw Errno.current
    case 1: return FileBirth(seconds: seconds, nanoseconds: nanoseconds)
    default: return nil
    }
}
