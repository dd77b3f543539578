// What `dpfs backup --to` may name: a regular file, which the new backup replaces by a
// rename, or a new name. A rename does not write into what it replaces, it takes its
// name: over a device node, FIFO or socket it would leave a regular file where the
// node was. Those, a directory, and a symbolic link to any of them or to nothing are
// refused before anything is written. A symbolic link to a regular file is followed:
// the file it names is replaced and the link kept, as a shell's `>` writes through it.
import Foundation
import Glibc

enum BackupTarget {
    /// The file to write beside and rename over for `path` (as given): the regular file
    /// it names, or the new name in its directory, symbolic links resolved.
    static func resolve(_ path: String) throws -> String {
        var info = stat()
        guard lstat(path, &info) == 0 else {
            guard errno == ENOENT else { throw failed(path) }
            // A trailing slash asks for a directory, which a backup file is not.
            guard !path.hasSuffix("/") else { throw unusable(path, "it names a directory") }
            return try newName(path)
        }
        if info.st_mode & S_IFMT == S_IFLNK {
            try checkLinkTarget(path)
        } else if let kind = kind(of: info.st_mode) {
            throw unusable(path, "it is \(kind)")
        }
        guard let real = realpath(path, nil) else { throw failed(path) }
        defer { free(real) }
        return String(cString: real)
    }

    /// A new name in its directory, the directory resolved by realpath(3).
    private static func newName(_ path: String) throws -> String {
        let name = (path as NSString).lastPathComponent
        let parent = path.contains("/") ? String(path[..<(path.lastIndex(of: "/") ?? path.endIndex)]) : "."
        guard let real = realpath(parent.isEmpty ? "/" : parent, nil) else { throw failed(path) }
        defer { free(real) }
        let directory = String(cString: real)
        return (directory == "/" ? "" : directory) + "/" + name
    }

    /// Refuses a symbolic link unless it leads to a regular file. stat, not realpath,
    /// says what it leads to: /proc/self/fd/N links to a pipe or socket with no path.
    private static func checkLinkTarget(_ path: String) throws {
        var info = stat()
        guard stat(path, &info) == 0 else {
            throw errno == ENOENT ? unusable(path, "it is a symbolic link to nothing") : failed(path)
        }
        guard let kind = kind(of: info.st_mode) else { return }
        var resolved = ""
        if let real = realpath(path, nil) {
            resolved = " (\(String(cString: real)))"
            free(real)
        }
        throw unusable(path, "it is a symbolic link to \(kind)\(resolved)")
    }

    /// Whether `file` (resolved) is still absent or a regular file, just before the
    /// rename: the backup takes long enough for the name to be given to something else.
    static func checkUnchanged(_ file: String) throws {
        var info = stat()
        guard lstat(file, &info) == 0 else {
            if errno == ENOENT { return }
            throw CLIError("cannot look at \(file): \(String(cString: strerror(errno))); no backup was written")
        }
        guard info.st_mode & S_IFMT == S_IFREG else {
            throw CLIError("\(file) is no longer a regular file; no backup was written")
        }
    }

    /// What a node other than a regular file is, for the message; nil for a regular file.
    private static func kind(of mode: mode_t) -> String? {
        switch mode & S_IFMT {
        case S_IFREG: nil
        case S_IFDIR: "a directory"
        case S_IFCHR: "a character device"
        case S_IFBLK: "a block device"
        case S_IFIFO: "a FIFO"
        case S_IFSOCK: "a socket"
        default: "a node of an unknown type"
        }
    }

    private static func failed(_ path: String) -> CLIError {
        CLIError("cannot write the backup to \(path): \(String(cString: strerror(errno))); nothing was written")
    }

    private static func unusable(_ path: String, _ reason: String) -> CLIError {
        CLIError("cannot write the backup to \(path): \(reason), not a regular file or a new name; nothing was written")
    }
}
