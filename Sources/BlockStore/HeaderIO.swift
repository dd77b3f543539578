// Reading a backing file's header, shared by the mount and fsck. Every backing file has
// one from the moment it has a name (new files are made unnamed and linked in once the
// header is written), so a file shorter than a header is damage, never a new file.
import DataProtection
import Glibc
import SystemCalls

public enum HeaderIO {
    /// The parsed and authenticated header; EIO when it is short or does not verify.
    public static func read(_ fd: Int32, metadataKey: SecureBuffer) throws(Errno) -> FileHeader {
        var bytes = [UInt8](repeating: 0, count: BlockLayout.headerSize)
        let n = try bytes.withMutableBytes { (buffer) throws(Errno) in try preadAll(fd, buffer, at: 0) }
        // A Result, not try?: withUnsafeBytes rethrows any Error, which would box the
        // parse error on every open.
        guard n == BlockLayout.headerSize,
              case .success(let header) = bytes.withUnsafeBytes({ bytes in
                  Result { () throws(FileHeader.ParseError) in try FileHeader(parsing: bytes, metadataKey: metadataKey) }
              }) else {
            throw Errno.io
        }
        return header
    }

    /// Zeroes a superseded key slot and syncs: after a class change, only the slot of
    /// the current class may unwrap the file key.
    public static func eraseSlot(_ fd: Int32, index: Int) throws(Errno) {
        try FileHeader.emptySlot.withBytes { (bytes) throws(Errno) in
            try pwriteAll(fd, bytes, at: FileHeader.slotOffset(index))
        }
        try Errno.check(fdatasync(fd))
    }
}
