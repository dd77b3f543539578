// The class a directory passes to its new children, stored authenticated in the backing
// directory's `user.dpfs.protection` attribute (DirectoryClassRecord). A record that is
// missing or forged reads as EIO and no child can be made there: an attacker who edits
// the backing tree cannot lower the class of files created later. Changing a
// directory's class through the mount needs its current class key, as a file's does.
// A damaged record's directory keeps its ID when the device's keys prove it
// (DirectoryIDRecovery): its names still read, and setting its class again repairs it.
import BlockStore
import CLinux
import DataProtection
import Glibc
import SystemCalls

extension SandboxFileSystem {
    static let protectionAttribute = MountAttributes.protection

    /// The authenticated class record of a directory; EIO when missing or forged.
    /// Creates take the one kept on the inode; `fresh` (a class read or changed through
    /// the mount) reads the backing attribute, so damage there shows as EIO, and keeps
    /// what it found (nothing when it does not verify).
    func directoryRecord(_ directory: Inode, fresh: Bool = false) throws(Errno) -> DirectoryClassRecord.Decoded {
        if fresh {
            // Read and kept under the mutex: a class change that writes meanwhile
            // keeps its own record after this one (setDirectoryClass).
            return try directory.classRecord.withLock { (cached) throws(Errno) in
                cached = nil
                let found = try readDirectoryRecord(directory)
                cached = found
                return found
            }
        }
        if let known = directory.classRecord.withLock({ $0 }) { return known }
        let record = try readDirectoryRecord(directory)
        // Kept unless a class change through the mount got there first.
        return directory.classRecord.withLock { cached in
            if cached == nil { cached = record }
            return cached ?? record
        }
    }

    private func readDirectoryRecord(_ directory: Inode) throws(Errno) -> DirectoryClassRecord.Decoded {
        var buffer = [UInt8](repeating: 0, count: DirectoryClassRecord.size + 1)
        // One getxattr through /proc/self/fd (fgetxattr does not take an O_PATH descriptor).
        let n: Int
        do throws(Errno) {
            n = try systemCall(onPathOf: directory) { CLinux.getxattr($0, Self.protectionAttribute, &buffer, buffer.count) }
        } catch where error.rawValue == ENODATA || error.rawValue == ERANGE {
            n = 0  // no record, or one too long to be one
        }
        guard n > 0, let record = DirectoryClassRecord.decode(buffer[0..<n], metadataKey: device.metadataKey) else {
            logger.error("a directory's stored class is missing or does not verify: its new children are refused (EIO)")
            throw Errno.io
        }
        if let recorded = device.recordedDirectoryClass(record.directoryID),
           record.protectionClass.strength < recorded.strength {
            logger.error("a directory's stored class is weaker than the keybag records (put back from an older copy): its new children are refused (EIO)")
            throw Errno.io
        }
        return record
    }

    func directoryClass(_ directory: Inode, fresh: Bool = false) throws(Errno) -> ProtectionClass {
        try directoryRecord(directory, fresh: fresh).protectionClass
    }

    /// The ID of `directory` (open as `fd`), whose class record does not verify, when
    /// the device's keys prove it; nil when it is lost.
    func recoveredDirectoryID(_ directory: Inode, fd: Int32) -> [UInt8]? {
        let places = directory.places.withLock { $0.checked + $0.pending }
        return DirectoryIDRecovery.recover(at: procPath(fd), places: places, names: device.nameCipher,
                                           metadataKey: device.metadataKey)
    }

    /// A class change through the mount: needs the directory's current class key (EPERM),
    /// or, for a directory whose record is damaged, an unlocked device. A damaged record
    /// keeps the directory's ID when it can be recovered; a directory whose ID is lost
    /// gets a new one only when it holds no entries, whose names would then be lost for
    /// good (EIO: fsck's salvage copies them out).
    func setDirectoryClass(_ directory: Inode, _ newClass: ProtectionClass) throws(Errno) {
        let directoryID: [UInt8]
        var currentClass: ProtectionClass?
        let fd = try directory.systemCall { openat($0, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC) }
        defer { close(fd) }
        if let record = try? directoryRecord(directory, fresh: true) {
            if record.protectionClass == newClass { return }
            guard device.isAvailable(record.protectionClass) else { throw Errno.notPermitted }
            directoryID = record.directoryID
            currentClass = record.protectionClass
        } else {
            guard ProtectionClass.allCases.allSatisfy(device.isAvailable) else { throw Errno.notPermitted }
            // The ID the entries' names open under, recovered and checked against the
            // directory's own name tags (Names.swift).
            if let kept = try? self.directoryID(directory) {
                directoryID = kept
            } else {
                guard DirectoryIDRecovery.sampleNames(procPath(fd)).isEmpty else {
                    logger.error("a directory's class record is damaged and its ID cannot be recovered: setting its class is refused, as it would lose its entries' names (dpfs fsck --salvage copies them out)")
                    throw Errno.io
                }
                directoryID = DirectoryClassRecord.newDirectoryID()
            }
        }
        do throws(Errno) {
            try storeRecordedDirectoryClass(fd, newClass, from: currentClass, directoryID: directoryID)
        } catch {
            directory.classRecord.withLock { $0 = nil }
            throw error
        }
        directory.classRecord.withLock {
            $0 = DirectoryClassRecord.Decoded(protectionClass: newClass, directoryID: directoryID)
        }
        guard directoryID != directory.directoryID.withLock({ $0 }) else { return }
        // A repaired record has a new ID: the directory's tags are remade for the names
        // the kernel knows it by, which the unlocked device vouches for.
        directory.directoryID.withLock { $0 = directoryID }
        // Its names read differently now: the kernel's copy of its listing goes.
        kernel.invalidatePages(directory)
        let places = directory.places.withLock { $0.checked + $0.pending }
        let tags = places.map { NameBinding.tag(identity: directoryID, place: $0, metadataKey: device.metadataKey) }
        for place in places { vouched(directory, for: place) }
        try withProcPath(fd) { (path) throws(Errno) in try NameTagStore.write(path, tags) }
    }

    /// A class change the keybag records, so that the record from before it, put back,
    /// is refused. The weaker of the two classes is never the only one vouched for: a
    /// raise writes the record first, a lowering the keybag first, and a crash between
    /// leaves the old protection in force. A directory the keybag has no class for has
    /// only ever been lowered from its first: every record it had is stronger than the
    /// new one, none weakens it put back, and its lowering saves no keybag (a whole
    /// tree lowered, as `rsync -aX` does to a copy's directories, writes it not once).
    private func storeRecordedDirectoryClass(_ fd: Int32, _ newClass: ProtectionClass, from currentClass: ProtectionClass?,
                                             directoryID: [UInt8]) throws(Errno) {
        let recorded = device.recordedDirectoryClass(directoryID)
        if recorded == nil, let currentClass, newClass.strength < currentClass.strength {
            return try storeDirectoryClass(fd, newClass, directoryID: directoryID)
        }
        let raise = newClass.strength >= (recorded?.strength ?? 0)
        // Each step on disk before the next, and the last before the reply: a power cut
        // must not leave the keybag ahead of a raised record (the directory would read
        // as rolled back, EIO) nor lose a lowering reported done.
        if raise { try storeSyncedDirectoryClass(fd, newClass, directoryID: directoryID) }
        do { try device.recordDirectoryClass(directoryID, newClass) } catch {
            logger.error("a directory's new class could not be recorded in the keybag: \(error)")
            // A full disk is the caller's to know and mend; anything else is damage.
            if let system = error as? SystemError, system.code == ENOSPC || system.code == EDQUOT {
                throw Errno(system.code)
            }
            throw Errno.io
        }
        if !raise { try storeSyncedDirectoryClass(fd, newClass, directoryID: directoryID) }
    }

    private func storeSyncedDirectoryClass(_ fd: Int32, _ newClass: ProtectionClass, directoryID: [UInt8]) throws(Errno) {
        try storeDirectoryClass(fd, newClass, directoryID: directoryID)
        try Errno.check(Glibc.fsync(fd))
    }

    /// Stores the class record of the new directory `name` in `parent`, and the tag of
    /// its name at `place` (NameBindings.swift).
    func storeDirectoryClass(_ parent: Inode, _ name: UnsafePointer<CChar>, _ protectionClass: ProtectionClass,
                             directoryID: [UInt8], place: NamePlace?) throws(Errno) {
        let fd = try parent.systemCall { openat($0, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW) }
        defer { close(fd) }
        try storeDirectoryClass(fd, protectionClass, directoryID: directoryID)
        guard let place else { return }
        // A new directory: its one tag, no other to keep.
        let tag = NameBinding.tag(identity: directoryID, place: place, metadataKey: device.metadataKey)
        try withProcPath(fd) { (path) throws(Errno) in try NameTagStore.write(path, [tag]) }
    }

    func storeDirectoryClass(_ fd: Int32, _ protectionClass: ProtectionClass, directoryID: [UInt8]) throws(Errno) {
        let record = DirectoryClassRecord.encode(protectionClass, directoryID: directoryID, metadataKey: device.metadataKey)
        try Errno.check(record.withUnsafeBytes { fsetxattr(fd, Self.protectionAttribute, $0.baseAddress, $0.count, 0) })
    }
}
