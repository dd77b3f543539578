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

    /// The authenticated class record of a directory; EIO when missing or forged.
    /// Creates take the one kept on the inode; `fresh` (a class read or changed through
    /// the mount) reads the backing attribute, so damage there shows as EIO, and keeps
    /// what it found (nothing when it does not verify).
    func directoryRecord(_ directory: Inode, fresh: Bool = false) -> Result<DirectoryClassRecord.Decoded, Errno> {
        if fresh {
            // Read and kept under the mutex: a class change that writes meanwhile
            // keeps its own record after this one (setDirectoryClass).
            return directory.classRecord.withLock { cached in
                let found = readDirectoryRecord(directory)
                cached = try? found.get()
                return found
            }
        }
        if let known = directory.classRecord.withLock({ $0 }) { return .success(known) }
        let found = readDirectoryRecord(directory)
        guard case .success(let record) = found else { return found }
        // Kept unless a class change through the mount got there first.
        return .success(directory.classRecord.withLock { cached in
            if cached == nil { cached = record }
            return cached ?? record
        })
    }

    private func readDirectoryRecord(_ directory: Inode) -> Result<DirectoryClassRecord.Decoded, Errno> {
        var buffer = [UInt8](repeating: 0, count: DirectoryClassRecord.size + 1)
        // One getxattr through /proc/self/fd (fgetxattr does not take an O_PATH descriptor).
        let n = withNodePath(directory) { CLinux.getxattr($0, Self.protectionAttribute, &buffer, buffer.count) }
        if n < 0 && errno != ENODATA && errno != ERANGE { return .failure(.current) }
        guard n > 0, let record = DirectoryClassRecord.decode(buffer[0..<n], metadataKey: device.metadataKey) else {
            logger.error("a directory's stored class is missing or does not verify: its new children are refused (EIO)")
            return .failure(.io)
        }
        if let recorded = device.recordedDirectoryClass(record.directoryID),
           record.protectionClass.strength < recorded.strength {
            logger.error("a directory's stored class is weaker than the keybag records (put back from an older copy): its new children are refused (EIO)")
            return .failure(.io)
        }
        return .success(record)
    }

    func directoryClass(_ directory: Inode, fresh: Bool = false) -> Result<ProtectionClass, Errno> {
        directoryRecord(directory, fresh: fresh).map(\.protectionClass)
    }

    /// A class change through the mount: needs the directory's current class key (EPERM),
    /// or, for a directory whose record is damaged, an unlocked device.
    func setDirectoryClass(_ directory: Inode, _ newClass: ProtectionClass) -> Int32 {
        let directoryID: [UInt8]
        switch directoryRecord(directory, fresh: true) {
        case .success(let record):
            if record.protectionClass == newClass { return 0 }
            guard device.isAvailable(record.protectionClass) else { return -EPERM }
            directoryID = record.directoryID
        case .failure:
            guard ProtectionClass.allCases.allSatisfy(device.isAvailable) else { return -EPERM }
            directoryID = DirectoryClassRecord.newDirectoryID()
        }
        let fd = directory.withDescriptor { openat($0, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC) }
        guard fd >= 0 else { return -errno }
        defer { close(fd) }
        let rc = storeRecordedDirectoryClass(fd, newClass, directoryID: directoryID)
        directory.classRecord.withLock {
            $0 = rc == 0 ? DirectoryClassRecord.Decoded(protectionClass: newClass, directoryID: directoryID) : nil
        }
        guard rc == 0, directoryID != directory.directoryID.withLock({ $0 }) else { return rc }
        // A repaired record has a new ID: the directory's tags are remade for the names
        // the kernel knows it by, which the unlocked device vouches for.
        directory.directoryID.withLock { $0 = directoryID }
        // Its names read differently now: the kernel's copy of its listing goes.
        kernel.invalidatePages(directory)
        let places = directory.places.withLock { $0.checked + $0.pending }
        let tags = places.map { NameBinding.tag(identity: directoryID, place: $0, metadataKey: device.metadataKey) }
        for place in places { vouched(directory, for: place) }
        return procPath(fd).withCString { NameTagStore.write($0, tags) }
    }

    /// A class change the keybag records, so that the record from before it, put back,
    /// is refused. The weaker of the two classes is never the only one vouched for: a
    /// raise writes the record first, a lowering the keybag first, and a crash between
    /// leaves the old protection in force.
    private func storeRecordedDirectoryClass(_ fd: Int32, _ newClass: ProtectionClass, directoryID: [UInt8]) -> Int32 {
        let raise = newClass.strength >= (device.recordedDirectoryClass(directoryID)?.strength ?? 0)
        if raise {
            let rc = storeDirectoryClass(fd, newClass, directoryID: directoryID)
            guard rc == 0 else { return rc }
        }
        do { try device.recordDirectoryClass(directoryID, newClass) } catch {
            logger.error("a directory's new class could not be recorded in the keybag: \(error)")
            return -EIO
        }
        return raise ? 0 : storeDirectoryClass(fd, newClass, directoryID: directoryID)
    }

    /// Stores the class record of the new directory `name` in `parent`, and the tag of
    /// its name at `place` (NameBindings.swift).
    @discardableResult
    func storeDirectoryClass(_ parent: Inode, _ name: UnsafePointer<CChar>, _ protectionClass: ProtectionClass,
                             directoryID: [UInt8], place: NamePlace?) -> Int32 {
        let fd = parent.withDescriptor { openat($0, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW) }
        guard fd >= 0 else { return -errno }
        defer { close(fd) }
        let rc = storeDirectoryClass(fd, protectionClass, directoryID: directoryID)
        guard rc == 0, let place else { return rc }
        // A new directory: its one tag, no other to keep.
        let tag = NameBinding.tag(identity: directoryID, place: place, metadataKey: device.metadataKey)
        return procPath(fd).withCString { NameTagStore.write($0, [tag]) }
    }

    func storeDirectoryClass(_ fd: Int32, _ protectionClass: ProtectionClass, directoryID: [UInt8]) -> Int32 {
        let record = DirectoryClassRecord.encode(protectionClass, directoryID: directoryID, metadataKey: device.metadataKey)
        let rc = record.withUnsafeBytes { fsetxattr(fd, Self.protectionAttribute, $0.baseAddress, $0.count, 0) }
        return rc == 0 ? 0 : -errno
    }
}
