// An exclusive flock(2) held for the life of a process that serves or checks a device
// (the daemon, fsck), on a file named by the device's UUID where its record lives.
// Each copy of a device directory has its own mount.lock, but every copy shares the
// record; a copy in use beside another moves the record on under it, and each then
// reads the other's writes as a rollback. Keyed by what the copies share, this lock
// lets one of them be in use at a time, and a flock ends with its holder: a killed
// daemon leaves nothing to clear.
//
// The holder takes the lock and writes its path under the record's lock
// (RecordFileLock), and a refused process reads the path under it too: a refusal never
// meets the lock taken with no path yet, or with the path of a holder gone before.
import Glibc

public enum DeviceUseLock {
    /// A file store's sits beside the record; a tpm2 store's under /run/lock, on the
    /// same terms as the record's lock (RecordFileLock).
    static func path(of deviceUUID: String, in location: SecretStoreLocation) -> String? {
        RecordFileLock.lockFilePath(of: deviceUUID, in: location, suffix: ".inuse")
    }

    /// Takes the lock of the device in `directory`, to hold until the process exits,
    /// and writes the directory's path into it for a refused copy to name. Nil where
    /// there is no lock to take: a keybag that names no store (the boot refuses it with
    /// its own error), or a tpm2 store without a /run/lock file of ours.
    public static func take(for directory: DeviceDirectory) throws -> Int32? {
        try lock(for: directory, creating: true) { fd in
            // Written in place, not replaced: the flock is on this inode.
            let line = Array((directory.root + "\n").utf8)
            _ = ftruncate(fd, 0)
            _ = line.withUnsafeBytes { pwrite(fd, $0.baseAddress, $0.count, 0) }
        }
    }

    /// Refuses, as `take` does, while a copy of `directory` is in use; creates no lock
    /// where none was taken (for a command that removes the device's entries).
    public static func checkNotInUse(_ directory: DeviceDirectory) throws {
        if let fd = try lock(for: directory, creating: false, { _ in }) { close(fd) }
    }

    /// Runs `body` holding the lock of the device named `deviceUUID` in `store`, for a
    /// command that removes the device's entries, this lock file with them, knowing
    /// the device by its UUID alone: refused, as `take` is, while the device is in
    /// use. Creates nothing; where there is no lock file, `body` runs without it.
    public static func whileNotInUse<T>(_ deviceUUID: String, in store: SecretStoreLocation,
                                        _ body: () throws -> T) throws -> T {
        let fd = try lock(deviceUUID, in: store, creating: false, { _ in })
        defer { if let fd { close(fd) } }
        return try body()
    }

    private static func lock(for directory: DeviceDirectory, creating: Bool,
                             _ locked: (Int32) -> Void) throws -> Int32? {
        guard let entry = try? KeybagFile.storeEntry(of: directory) else { return nil }
        if case .file(let storeDirectory) = entry.store {
            // The refusal of a missing or open store, as the secret's load gives it.
            try DeviceSecretStore.checkDirectory(storeDirectory, store: entry.store)
            // A forgotten device's boot fails at its secret: a lock file made for it
            // would be left in the store with nothing to forget it by.
            if creating, access(DeviceSecretStore.path(of: entry.deviceUUID, in: storeDirectory), F_OK) != 0, errno == ENOENT {
                return nil
            }
        }
        return try lock(entry.deviceUUID, in: entry.store, creating: creating, locked)
    }

    /// The lock's descriptor, locked, once `locked` has run on it under the record's
    /// lock; throws copyInUse, naming the holder, if another process holds it.
    private static func lock(_ deviceUUID: String, in store: SecretStoreLocation, creating: Bool,
                             _ locked: (Int32) -> Void) throws -> Int32? {
        guard let path = path(of: deviceUUID, in: store) else { return nil }
        let fd = open(path, O_RDWR | O_CLOEXEC | O_NOFOLLOW | (creating ? O_CREAT : 0), 0o600)
        if fd < 0, !creating, errno == ENOENT { return nil }
        var info = stat()
        if case .tpm2 = store, fd < 0 || fstat(fd, &info) != 0 || info.st_uid != geteuid() {
            // /run/lock is shared by every user: one who made this name first could
            // refuse every mount of the device (docs/limitations.md).
            if fd >= 0 { close(fd) }
            return nil
        }
        guard fd >= 0 else {
            throw DeviceRecordError.unreadable(store: store.description, device: deviceUUID,
                                               reason: "its lock file \(path) cannot be opened: \(String(cString: strerror(errno)))")
        }
        let taking: Taking
        do {
            taking = try RecordFileLock.holding(RecordFileLock.path(of: deviceUUID, in: store),
                                                store: store, device: deviceUUID) {
                guard flock(fd, LOCK_EX | LOCK_NB) == 0 else { return .refused(holder: holderDirectory(fd)) }
                locked(fd)
                return .taken
            }
        } catch {
            close(fd)
            throw error
        }
        if case .refused(let holder) = taking {
            close(fd)
            throw DeviceError.copyInUse(device: deviceUUID, holder: holder,
                                        mountpoint: holder.flatMap { DeviceDirectory($0).mountpoint })
        }
        return fd
    }

    private enum Taking {
        case taken
        case refused(holder: String?)
    }

    /// The device directory the holder of the lock on `fd` wrote, if it wrote it whole.
    private static func holderDirectory(_ fd: Int32) -> String? {
        var buffer = [UInt8](repeating: 0, count: Int(PATH_MAX) + 1)
        let count = buffer.withUnsafeMutableBytes { pread(fd, $0.baseAddress, $0.count, 0) }
        guard count > 1, buffer[count - 1] == UInt8(ascii: "\n") else { return nil }
        let path = String(decoding: buffer[0 ..< count - 1], as: UTF8.self)
        return path.hasPrefix("/") ? path : nil
    }

    /// Removes the lock file of a device whose store entries are removed.
    static func remove(of deviceUUID: String, in store: SecretStoreLocation) {
        if let path = path(of: deviceUUID, in: store) { _ = path.withCString { unlink($0) } }
    }
}
