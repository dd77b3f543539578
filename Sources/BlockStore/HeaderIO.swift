// Reading a backing file's header, shared by the mount and fsck. Every backing file has
// one from the moment it has a name (new files are made unnamed and linked in once the
// header is written), so a file shorter than a header is damage, never a new file.
import DataProtection
import Glibc

public enum HeaderIO {
    /// The parsed and authenticated header, or EIO.
    public static func read(_ fd: Int32, metadataKey: SecureBuffer) -> Result<FileHeader, Errno> {
        var bytes = [UInt8](repeating: 0, count: BlockLayout.headerSize)
        let n = bytes.withUnsafeMutableBytes { BlockIO.preadAll(fd, $0, at: 0) }
        if n < 0 { return .failure(Errno(negative: n)) }
        guard n == BlockLayout.headerSize,
              let header = try? bytes.withUnsafeBytes({ bytes throws(FileHeader.ParseError) in
                  try FileHeader(parsing: bytes, metadataKey: metadataKey)
              }) else {
            return .failure(Errno.io)
        }
        return .success(header)
    }

    /// Zeroes a superseded key slot and syncs: after a class change, only the slot of
    /// the current class may unwrap the file key.
    public static func eraseSlot(_ fd: Int32, index: Int) -> Int32 {
        let written = FileHeader.emptySlot.withUnsafeBytes { BlockIO.pwriteAll(fd, $0, at: FileHeader.slotOffset(index)) }
        if written != 0 { return written }
        return fdatasync(fd) == 0 ? 0 : -errno
    }
}
