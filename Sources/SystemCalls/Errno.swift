// The one error type of the filesystem core (BlockStore, SandboxFS): a positive errno
// value, thrown as `throws(Errno)`. A C call's "-1 and errno" (or "negative count")
// becomes a thrown Errno right where it is made (`Errno.check`, or one of the wrappers
// in this module); the FUSE reply is the one place it turns back into a number.
// A trivial struct: throwing it allocates nothing and boxes nothing.
import Glibc

public struct Errno: Error, Equatable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: Int32

    @inline(__always) public init(_ rawValue: Int32) { self.rawValue = rawValue }

    /// The calling thread's errno now.
    @inline(__always) public static var current: Errno { Errno(errno) }

    /// `rc` when the call succeeded (not negative); the thread's errno, thrown, when it
    /// returned -1.
    @inline(__always) @discardableResult
    public static func check<T: FixedWidthInteger & SignedInteger>(_ rc: T) throws(Errno) -> T {
        if rc < 0 { throw Errno.current }
        return rc
    }

    public var description: String { String(cString: strerror(rawValue)) }

    public static let notPermitted = Errno(EPERM)
    public static let io = Errno(EIO)
    public static let noEntry = Errno(ENOENT)
    public static let invalid = Errno(EINVAL)
    public static let badDescriptor = Errno(EBADF)
    public static let notSupported = Errno(EOPNOTSUPP)
    public static let noSpace = Errno(ENOSPC)
    public static let quotaExceeded = Errno(EDQUOT)
    public static let fileTooLarge = Errno(EFBIG)
}
