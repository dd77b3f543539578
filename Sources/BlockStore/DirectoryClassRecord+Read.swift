// A backing directory's class record, read from its `user.dpfs.protection` attribute
// by path (a /proc/self/fd path serves an O_PATH descriptor).
import CLinux
import DataProtection
import Glibc

extension DirectoryClassRecord {
    /// The verified class record of the backing directory at `path`; nil when missing or forged.
    public static func read(at path: String, metadataKey: SecureBuffer) -> Decoded? {
        var buffer = [UInt8](repeating: 0, count: size + 1)
        let n = getxattr(path, MountAttributes.protection, &buffer, buffer.count)
        guard n > 0 else { return nil }
        return decode(buffer[0..<n], metadataKey: metadataKey)
    }
}
