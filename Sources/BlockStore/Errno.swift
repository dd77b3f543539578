// The one error type for a failed system call across dpfs's filesystem modules: a
// positive errno value. FUSE replies want it positive (fuse_reply_err), the old path
// API negative; `negated` spells the latter where a C interface still asks for it.
import Glibc

public struct Errno: Error, Equatable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: Int32

    @inline(__always) public init(_ rawValue: Int32) { self.rawValue = rawValue }

    /// The calling thread's errno now.
    @inline(__always) public static var current: Errno { Errno(errno) }

    /// From a "negative errno or count" return value (n < 0).
    @inline(__always) public init(negative: Int) { self.rawValue = Int32(-negative) }

    /// -errno, for interfaces that return it that way.
    @inline(__always) public var negated: Int32 { -rawValue }

    public var description: String { String(cString: strerror(rawValue)) }

    public static let notPermitted = Errno(EPERM)
    public static let io = Errno(EIO)
    public static let noEntry = Errno(ENOENT)
    public static let invalid = Errno(EINVAL)
    public static let badDescriptor = Errno(EBADF)
    public static let notSupported = Errno(EOPNOTSUPP)
}
