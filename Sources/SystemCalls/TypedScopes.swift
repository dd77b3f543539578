// The standard library's withUnsafeBytes and withCString rethrow `any Error`: these
// keep a body's Errno typed, so a system call made inside one still throws Errno out
// (a Result on the stack carries it across; nothing is allocated).

extension Array where Element == UInt8 {
    /// withUnsafeBytes for a body that throws an Errno.
    @inline(__always)
    public func withBytes<R>(_ body: (UnsafeRawBufferPointer) throws(Errno) -> R) throws(Errno) -> R {
        try withUnsafeBytes { bytes in Result { () throws(Errno) in try body(bytes) } }.get()
    }

    /// withUnsafeMutableBytes for a body that throws an Errno.
    @inline(__always)
    public mutating func withMutableBytes<R>(_ body: (UnsafeMutableRawBufferPointer) throws(Errno) -> R) throws(Errno) -> R {
        try withUnsafeMutableBytes { bytes in Result { () throws(Errno) in try body(bytes) } }.get()
    }
}
