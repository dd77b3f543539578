// The directories a command may make on its way to what it was asked for (a device
// directory's parent, a file secret store with --create): a command that fails then
// removes those it made, and leaves the machine as it found it.
import DataProtection
import Foundation
import Glibc

struct MissingDirectories {
    private let paths: [String]

    /// Those of `directories` and their parents that do not exist now.
    init(of directories: [String]) {
        var missing: Set<String> = []
        for directory in directories {
            var path = AbsolutePath.of(directory)
            var info = stat()
            while path != "/", !path.isEmpty, lstat(path, &info) != 0, errno == ENOENT {
                missing.insert(path)
                path = (path as NSString).deletingLastPathComponent
            }
        }
        paths = Array(missing)
    }

    /// Removes those that exist now and are empty, each before its parent; one that holds
    /// anything stays, with its parents.
    func removeEmpty() {
        for path in paths.sorted(by: { $0.count > $1.count }) { rmdir(path) }
    }
}
