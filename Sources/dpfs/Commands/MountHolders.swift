// What keeps a mount busy, for unmount's refusal: the processes whose working
// directory, root or open files are under the mount point, as /proc shows them to the
// caller (another user's only to root). Only links are read, never the mount itself,
// so a mount whose daemon hangs cannot hang the search; the walk is bounded, so a
// machine with very many processes or descriptors is not walked for long.
import Foundation
import Glibc

enum MountHolders {
    struct Holder: Equatable {
        let pid: pid_t
        let name: String
        /// "works in it", or the path of a file it has open there.
        let use: String
    }

    static let processLimit = 8192
    static let descriptorLimit = 65536

    /// The holders found under `mountpoint` (an absolute path without symlinks),
    /// this process left out.
    static func find(under mountpoint: String) -> [Holder] {
        var holders: [Holder] = []
        var descriptorsLeft = descriptorLimit
        for pid in numberedEntries(of: "/proc", limit: processLimit) where pid != getpid() {
            guard let use = use(of: pid, under: mountpoint, descriptorsLeft: &descriptorsLeft) else { continue }
            let name = (try? String(contentsOfFile: "/proc/\(pid)/comm", encoding: .utf8))?
                .trimmingCharacters(in: .whitespacesAndNewlines) ?? "?"
            holders.append(Holder(pid: pid, name: name, use: use))
        }
        return holders
    }

    /// "bash (pid 12) works in it, less (pid 34) has /m/a open", at most `shown` named.
    static func describe(_ holders: [Holder], shown: Int = 3) -> String {
        let named = holders.prefix(shown).map { "\($0.name) (pid \($0.pid)) \($0.use)" }
        let more = holders.count > shown ? " and \(holders.count - shown) more" : ""
        return named.joined(separator: ", ") + more
    }

    private static func use(of pid: pid_t, under mountpoint: String, descriptorsLeft: inout Int) -> String? {
        for place in ["cwd", "root"] {
            if let path = link("/proc/\(pid)/\(place)"), isPath(path, within: mountpoint) { return "works in it" }
        }
        let directory = "/proc/\(pid)/fd"
        for fd in numberedEntries(of: directory, limit: descriptorsLeft) {
            descriptorsLeft -= 1
            if let path = link("\(directory)/\(fd)"), isPath(path, within: mountpoint) { return "has \(path) open" }
        }
        return nil
    }

    /// The names of `directory` that are numbers (pids, descriptors), at most `limit`.
    private static func numberedEntries(of directory: String, limit: Int) -> [Int32] {
        guard limit > 0, let stream = opendir(directory) else { return [] }
        defer { closedir(stream) }
        var numbers: [Int32] = []
        while numbers.count < limit, let entry = readdir(stream) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            if let number = Int32(name) { numbers.append(number) }
        }
        return numbers
    }

    private static func link(_ path: String) -> String? {
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        let n = readlink(path, &buffer, buffer.count - 1)
        guard n > 0 else { return nil }
        return String(decoding: buffer[0..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
