// Open files by backing inode, so hard links and repeated opens share one key, one
// size and one lock. The last release drops the entry and, with it, the file key.
import BlockStore
import DataProtection
import Synchronization

final class OpenFileTable: Sendable {
    private let entries = Mutex<[InodeKey: OpenFile]>([:])
    /// Paths of files of lockable classes opened since the last lock, whose pages the
    /// kernel may still cache after their last close.
    private let cachedPaths = Mutex<[String: ProtectionClass]>([:])

    func existing(_ inode: InodeKey) -> OpenFile? {
        entries.withLock { $0[inode] }
    }

    /// Returns the entry for `inode`, creating it with `make` when absent, and counts
    /// one more handle on it.
    func retain(_ inode: InodeKey, path: String, make: () throws(Errno) -> OpenFile) throws(Errno) -> OpenFile {
        let file = try entries.withLock { entries throws(Errno) -> OpenFile in
            let file: OpenFile
            if let existing = entries[inode] {
                file = existing
            } else {
                file = try make()
                entries[inode] = file
            }
            file.handles += 1
            file.paths.insert(path)
            return file
        }
        if file.protectionClass != .none {
            cachedPaths.withLock { $0[path] = file.protectionClass }
        }
        return file
    }

    func withPaths(of file: OpenFile) -> Set<String> {
        entries.withLock { _ in file.paths }
    }

    func release(_ file: OpenFile) {
        entries.withLock { entries in
            file.handles -= 1
            if file.handles == 0 { entries.removeValue(forKey: file.inode) }
        }
    }

    func files(of classes: Set<ProtectionClass>) -> [OpenFile] {
        entries.withLock { $0.values.filter { classes.contains($0.protectionClass) } }
    }

    /// Paths whose cached pages must go when `classes` become unavailable.
    func takeCachedPaths(of classes: Set<ProtectionClass>) -> [String] {
        cachedPaths.withLock { paths in
            let matching = paths.filter { classes.contains($0.value) }.map(\.key)
            for path in matching { paths.removeValue(forKey: path) }
            return matching
        }
    }

    func noteClass(_ protectionClass: ProtectionClass, path: String) {
        guard protectionClass != .none else { return }
        cachedPaths.withLock { $0[path] = protectionClass }
    }

    /// Keeps remembered paths right after a rename, so invalidation finds them.
    func renamed(from old: String, to new: String) {
        func moved(_ path: String) -> String? {
            if path == old { return new }
            if path.hasPrefix(old + "/") { return new + path.dropFirst(old.count) }
            return nil
        }
        entries.withLock { entries in
            for file in entries.values {
                file.paths = Set(file.paths.map { moved($0) ?? $0 })
            }
        }
        cachedPaths.withLock { paths in
            for (path, protectionClass) in paths {
                if let target = moved(path) {
                    paths.removeValue(forKey: path)
                    paths[target] = protectionClass
                }
            }
        }
    }
}
