// Reading a backing file's header, shared by the mount and fsck.
import DataProtection
import Glibc

enum HeaderIO {
    /// The parsed header; nil for a zero-length file (a create cut short by a crash).
    static func read(_ fd: Int32) -> Result<FileHeader?, FSErrno> {
        var bytes = [UInt8](repeating: 0, count: BlockLayout.headerSize)
        let n = bytes.withUnsafeMutableBytes { BlockIO.preadAll(fd, $0, at: 0) }
        if n < 0 { return .failure(FSErrno(Int32(n))) }
        if n == 0 { return .success(nil) }
        guard n == BlockLayout.headerSize,
              let header = try? bytes.withUnsafeBytes({ try FileHeader(parsing: $0) }) else {
            return .failure(FSErrno(-EIO))
        }
        return .success(header)
    }
}
