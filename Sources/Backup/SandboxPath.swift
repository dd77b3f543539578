// Paths inside a backup: relative to the sandbox root, as raw bytes (a name need not
// be UTF-8), components joined by "/"; the root itself is the empty path. A reader
// accepts only paths made of real names, whose parent came before as a directory, so
// nothing a backup holds can point outside the sandbox it is restored into.
import Glibc

public enum SandboxPath {
    /// Whether `path` is a path a writer makes: no empty, "." or ".." component, no NUL.
    public static func isValid(_ path: [UInt8]) -> Bool {
        guard !path.contains(0) else { return false }
        if path.isEmpty { return true }
        return path.split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: false).allSatisfy { name in
            !name.isEmpty && !(name.count == 1 && name.first == UInt8(ascii: "."))
                && !(name.count == 2 && name.allSatisfy { $0 == UInt8(ascii: ".") }) && name.count <= 255
        }
    }

    /// The parent's path ("" for a top-level name); nil for the root.
    public static func parent(_ path: [UInt8]) -> [UInt8]? {
        guard !path.isEmpty else { return nil }
        guard let slash = path.lastIndex(of: UInt8(ascii: "/")) else { return [] }
        return Array(path[..<slash])
    }

    public static func join(_ parent: [UInt8], _ name: [UInt8]) -> [UInt8] {
        parent.isEmpty ? name : parent + [UInt8(ascii: "/")] + name
    }

    /// What iOS leaves out of a backup: tmp/ and Library/Caches/ (their contents;
    /// the directories themselves are recorded, as a new device has them too).
    public static let contentsExcluded: Set<[UInt8]> = [Array("tmp".utf8), Array("Library/Caches".utf8)]
}

/// A file's times as a record stores them: "seconds.nanoseconds".
enum RecordTime {
    static func encode(_ time: timespec) -> [UInt8] {
        let nanoseconds = String(time.tv_nsec)
        return Array("\(time.tv_sec).\(String(repeating: "0", count: max(0, 9 - nanoseconds.count)))\(nanoseconds)".utf8)
    }

    static func decode(_ bytes: [UInt8]?) -> timespec? {
        guard let bytes, let text = String(validating: bytes, as: UTF8.self) else { return nil }
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 2, let seconds = Int(parts[0]), let nanoseconds = Int(parts[1]),
              (0..<1_000_000_000).contains(nanoseconds) else { return nil }
        return timespec(tv_sec: seconds, tv_nsec: nanoseconds)
    }
}
