// Where a node's name tags (NameBinding) are kept: its backing `user.dpfs.names`
// attribute, read and written by path (a /proc/self/fd path serves an O_PATH
// descriptor, which the f*xattr calls do not take) or through an open descriptor.
import CLinux
import DataProtection
import Glibc
import SystemCalls

public enum NameTagStore {
    /// The tags stored on the node at `path`: empty when it has none; nil when they
    /// are malformed.
    public static func read(_ path: UnsafePointer<CChar>) throws(Errno) -> [[UInt8]]? {
        var buffer = [UInt8](repeating: 0, count: NameBinding.maxNames * NameBinding.tagSize)
        let n = CLinux.getxattr(path, NameBinding.attribute, &buffer, buffer.count)
        if n < 0 {
            guard errno == ENODATA else { throw Errno.current }
            return []
        }
        return NameBinding.decode(buffer[0..<n])
    }

    /// The tags stored on the node open as `fd`: empty when it has none; nil when they
    /// are malformed; EBADF for an O_PATH descriptor (read those by path).
    public static func read(descriptor fd: Int32) throws(Errno) -> [[UInt8]]? {
        var buffer = [UInt8](repeating: 0, count: NameBinding.maxNames * NameBinding.tagSize)
        let n = fgetxattr(fd, NameBinding.attribute, &buffer, buffer.count)
        if n < 0 {
            guard errno == ENODATA else { throw Errno.current }
            return []
        }
        return NameBinding.decode(buffer[0..<n])
    }

    /// Replaces the tags of the node at `path`.
    public static func write(_ path: UnsafePointer<CChar>, _ tags: [[UInt8]]) throws(Errno) {
        let bytes = NameBinding.encode(tags)
        try Errno.check(bytes.withUnsafeBytes { CLinux.setxattr(path, NameBinding.attribute, $0.baseAddress, $0.count, 0) })
    }
}
