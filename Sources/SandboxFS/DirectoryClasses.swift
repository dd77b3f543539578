// The class a directory passes to its new children, stored authenticated in the backing
// directory's `user.dpfs.protection` attribute (DirectoryClassRecord). A record that is
// missing or forged reads as EIO and no child can be made there: an attacker who edits
// the backing tree cannot lower the class of files created later. Changing a
// directory's class through the mount needs its current class key, as a file's does.
import BlockStore
import CLinux
import DataProtection
import Glibc

extension SandboxFileSystem {
    static let protectionAttribute = MountAttributes.protection

    /// The authenticated class record of a directory (a FUSE path); EIO when missing or forged.
    func directoryRecord(_ path: UnsafePointer<CChar>) -> Result<DirectoryClassRecord.Decoded, Errno> {
        var buffer = [UInt8](repeating: 0, count: DirectoryClassRecord.size + 1)
        // One lgetxattr, not open + fgetxattr + close: a create asks this every time.
        let n = withNodePath(path) { backing, follow in
            follow ? CLinux.getxattr(backing, Self.protectionAttribute, &buffer, buffer.count)
                : lgetxattr(backing, Self.protectionAttribute, &buffer, buffer.count)
        }
        if n < 0 && errno != ENODATA && errno != ERANGE { return .failure(Errno.current) }
        guard n > 0, let record = DirectoryClassRecord.decode(buffer[0..<n], metadataKey: device.metadataKey) else {
            logger.error("a directory's stored class is missing or does not verify: its new children are refused (EIO)")
            return .failure(Errno(EIO))
        }
        return .success(record)
    }

    func directoryClass(_ path: UnsafePointer<CChar>) -> Result<ProtectionClass, Errno> {
        directoryRecord(path).map(\.protectionClass)
    }

    func directoryClass(parentOf path: UnsafePointer<CChar>) -> Result<ProtectionClass, Errno> {
        Self.parentPath(path).withCString { directoryClass($0) }
    }

    /// A class change through the mount: needs the directory's current class key (EPERM),
    /// or, for a directory whose record is damaged, an unlocked device.
    func setDirectoryClass(_ path: UnsafePointer<CChar>, _ newClass: ProtectionClass) -> Int32 {
        let directoryID: [UInt8]
        switch directoryRecord(path) {
        case .success(let record):
            if record.protectionClass == newClass { return 0 }
            guard device.isAvailable(record.protectionClass) else { return -EPERM }
            directoryID = record.directoryID
        case .failure:
            guard ProtectionClass.allCases.allSatisfy(device.isAvailable) else { return -EPERM }
            directoryID = DirectoryClassRecord.newDirectoryID()
        }
        return storeDirectoryClass(path, newClass, directoryID: directoryID)
    }

    @discardableResult
    func storeDirectoryClass(_ path: UnsafePointer<CChar>, _ protectionClass: ProtectionClass, directoryID: [UInt8]) -> Int32 {
        let fd = at(path) { openat($0, $1, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW) }
        guard fd >= 0 else { return -errno }
        defer { close(fd) }
        let record = DirectoryClassRecord.encode(protectionClass, directoryID: directoryID, metadataKey: device.metadataKey)
        return Self.result(record.withUnsafeBytes { fsetxattr(fd, Self.protectionAttribute, $0.baseAddress, $0.count, 0) })
    }
}
