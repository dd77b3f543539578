// An exclusive flock(2) held for each read-modify-write of a device's record. The
// mount lock is the device directory's, and every copy of that directory has its
// own; the record is shared by all of them, so without this lock two processes
// holding different copies could each read the same failure count and write it back
// one higher, and attempts made at once would count as one.
import Glibc

enum RecordFileLock {
    /// A file store's lock sits beside its record. A tpm2 store's NV index has no
    /// directory, so its lock is under /run/lock when this process may create one
    /// there (and owns it: `holding`); otherwise updates go unlocked and the TPM's own
    /// lockout bounds attempts made at once.
    static func path(of deviceUUID: String, in location: SecretStoreLocation) -> String? {
        lockFilePath(of: deviceUUID, in: location, suffix: ".lock")
    }

    /// Where a lock file of the device's record, named with `suffix`, lives: beside a
    /// file store's record; under /run/lock for a tpm2 store, when this process may
    /// create one there.
    static func lockFilePath(of deviceUUID: String, in location: SecretStoreLocation, suffix: String) -> String? {
        switch location {
        case .file(let directory):
            return directory + "/" + deviceUUID + suffix
        case .tpm2:
            return access("/run/lock", W_OK) == 0 ? "/run/lock/dpfs-" + deviceUUID + suffix : nil
        }
    }

    static func holding<T>(_ path: String?, store: SecretStoreLocation, device: String, _ body: () throws -> T) throws -> T {
        guard let path else { return try body() }
        let fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0o600)
        var info = stat()
        if case .tpm2 = store, fd < 0 || fstat(fd, &info) != 0 || info.st_uid != geteuid() {
            // /run/lock is shared by every user: one who made this name first could
            // refuse it to us or hold it for ever. The TPM's lockout still counts.
            if fd >= 0 { close(fd) }
            return try body()
        }
        guard fd >= 0 else {
            throw DeviceRecordError.unreadable(store: store.description, device: device,
                                               reason: "its lock file \(path) cannot be opened: \(String(cString: strerror(errno)))")
        }
        defer { close(fd) }
        while flock(fd, LOCK_EX) != 0 {
            guard errno == EINTR else {
                throw DeviceRecordError.unreadable(store: store.description, device: device,
                                                   reason: "its lock file \(path) cannot be locked: \(String(cString: strerror(errno)))")
            }
        }
        return try body()
    }
}
