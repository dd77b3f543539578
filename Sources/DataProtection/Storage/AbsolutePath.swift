// Paths given on the command line, made absolute and resolved by the file system.
// Foundation's standardizingPath is not used for this: on Linux it resolves a relative
// symbolic link against the working directory instead of the link's own directory,
// so `/x/a/l -> x` became `/x/cwd/x` when the working directory held an `x`.
import Foundation
import Glibc

public enum AbsolutePath {
    /// `path` made absolute, with symbolic links, "." and ".." resolved by realpath(3);
    /// for a path that does not exist yet, its nearest existing ancestor is resolved and
    /// the rest kept as spelled.
    public static func of(_ path: String) -> String {
        let absolute = path.hasPrefix("/") ? path : FileManager.default.currentDirectoryPath + "/" + path
        return resolved(absolute)
    }

    private static func resolved(_ absolute: String) -> String {
        if let pointer = realpath(absolute, nil) {
            defer { free(pointer) }
            return String(cString: pointer)
        }
        guard let slash = absolute.lastIndex(of: "/") else { return absolute }
        let name = absolute[absolute.index(after: slash)...]
        let parent = slash == absolute.startIndex ? "/" : String(absolute[..<slash])
        // A name that moves through the tree cannot be kept as spelled.
        guard !name.isEmpty, name != ".", name != "..", parent != absolute else { return absolute }
        let base = resolved(parent)
        return base == "/" ? "/" + name : base + "/" + name
    }
}
