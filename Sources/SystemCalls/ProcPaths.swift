// /proc/self/fd/N: a path that reaches the node a descriptor holds, for the calls that
// take no descriptor (getxattr and the like, or an open of an O_PATH descriptor's node).
// A request that makes such a call gets the path formatted on the stack: a String would
// be one allocation per call on lookup, getattr, open and the xattr calls.
import Glibc

/// /proc/self/fd/N as a String, where one is kept or handed on.
@inline(__always)
public func procPath(_ fd: Int32) -> String { "/proc/self/fd/\(fd)" }

/// Runs `body` with /proc/self/fd/N for `fd`, formatted on the stack.
@discardableResult @inline(__always)
public func withProcPath<R, E: Error>(_ fd: Int32, _ body: (UnsafePointer<CChar>) throws(E) -> R) throws(E) -> R {
    let prefix: StaticString = "/proc/self/fd/"
    // The prefix, a sign, at most 10 digits and the NUL.
    return try withUnsafeTemporaryAllocation(of: CChar.self, capacity: 32) { (path) throws(E) -> R in
        let base = path.baseAddress.unsafelyUnwrapped
        var end = prefix.utf8CodeUnitCount
        UnsafeMutableRawPointer(base).copyMemory(from: prefix.utf8Start, byteCount: end)
        if fd < 0 {
            base[end] = 0x2d  // "-"
            end += 1
        }
        var digits = 1
        var rest = fd.magnitude / 10
        while rest > 0 { digits += 1; rest /= 10 }
        end += digits
        base[end] = 0
        var value = fd.magnitude
        for index in stride(from: end - 1, through: end - digits, by: -1) {
            base[index] = CChar(0x30 + value % 10)
            value /= 10
        }
        return try body(base)
    }
}
