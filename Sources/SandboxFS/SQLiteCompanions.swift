// SQLite's companion files take their database's class, as Apple's SQLite makes them
// on iOS, which is why an app can set the class on its database file alone: a new
// regular file named <base>-wal, <base>-shm or <base>-journal beside the regular file
// <base> gets <base>'s class rather than its directory's. Without it a `complete`
// database in an untilFirstAuth directory would keep its newest rows readable after a
// lock, in a -wal the failed checkpoint into the locked database leaves behind. A
// class given at creation (CreateClasses.swift) still comes first. Other tools'
// companions (an editor's swap file) are not guessed at: dpfs(1) says to set the
// class on the directory. Only a name with one of these suffixes costs a lookup.
import BlockStore
import DataProtection
import Glibc
import SystemCalls

enum SQLiteCompanion {
    /// The suffixes SQLite's unix VFS appends to a database's name for its write-ahead
    /// log, its shared-memory index and its rollback journal.
    static let suffixes: [[UInt8]] = ["-wal", "-shm", "-journal"].map { Array($0.utf8) }

    /// The length of the database name that `name` (`length` bytes) is a companion of;
    /// nil when it ends in no suffix, or is the suffix alone.
    static func baseLength(of name: UnsafePointer<CChar>, length: Int) -> Int? {
        for suffix in suffixes where length > suffix.count {
            let base = length - suffix.count
            if suffix.indices.allSatisfy({ UInt8(bitPattern: name[base + $0]) == suffix[$0] }) { return base }
        }
        return nil
    }
}

extension SandboxFileSystem {
    /// The class of the database that a new file `name` in `parent` is a companion of,
    /// read from its header; nil when `name` is no companion's, or its base is not a
    /// regular file reached by its own name (a file moved there in the backing tree
    /// lends it nothing), or cannot be read now.
    func companionClass(_ name: UnsafePointer<CChar>, in parent: Inode) -> ProtectionClass? {
        guard let baseLength = SQLiteCompanion.baseLength(of: name, length: strlen(name)) else { return nil }
        var base = Array(UnsafeBufferPointer(start: name, count: baseLength))
        base.append(0)
        guard let form = try? backingName(base, in: parent), let place = form.place else { return nil }
        return try? parent.withDescriptor { (parentFD) throws(Errno) -> ProtectionClass? in
            let fd = openat(parentFD, form.stored, OpenFlag.path | O_NOFOLLOW | O_CLOEXEC)
            guard fd >= 0 else { return nil }
            defer { close(fd) }
            var st = stat()
            guard fstatat(fd, "", &st, AtFlag.emptyPath | AT_SYMLINK_NOFOLLOW) == 0, st.st_mode & S_IFMT == S_IFREG else {
                return nil
            }
            let header = try readHeader(ofNode: fd)
            let tags = try readNameTags(fd)
            guard NameBinding.lists(tags, identity: header.fileID, place: place, metadataKey: device.metadataKey) else {
                return nil
            }
            return header.current?.protectionClass
        }
    }
}
