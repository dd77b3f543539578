// What the process's standard error receives while a call runs: fusermount3, which
// libfuse runs to mount for a user other than root, says why it refuses a mount only
// there, and so does libfuse's own log. The text goes on to the standard error as
// before, once the call returns.
import CLinux
import Foundation
import Glibc

enum StandardErrorCapture {
    /// The most read back; fusermount3 and libfuse write a line or two.
    static let limit = 64 * 1024

    /// Runs `body` with descriptor 2 on an unnamed file, then puts descriptor 2 back and
    /// copies the file's text to it. A file, not a pipe: a fusermount3 left running
    /// (auto_unmount) keeps it as its standard error, and neither blocks nor dies on a
    /// write to it. Where no such file can be made, `body` runs as it is (text nil).
    static func capturing<T>(_ body: () -> T) -> (result: T, text: String?) {
        let file = dpfs_open_tmpfile(AT_FDCWD, "/tmp", 0o600)
        guard file >= 0 else { return (body(), nil) }
        defer { close(file) }
        let saved = fcntl(2, F_DUPFD_CLOEXEC, 3)
        guard saved >= 0 else { return (body(), nil) }
        defer { close(saved) }
        guard dup2(file, 2) == 2 else { return (body(), nil) }
        let result = body()
        _ = dup2(saved, 2)
        var bytes = [UInt8](repeating: 0, count: limit)
        let count = bytes.withUnsafeMutableBytes { buffer in
            guard let base = buffer.baseAddress else { return 0 }
            var count = 0
            while count < limit {
                let read = pread(file, base + count, limit - count, off_t(count))
                if read < 0 && errno == EINTR { continue }
                guard read > 0 else { break }
                count += read
            }
            var written = 0
            while written < count {
                let wrote = write(2, base + written, count - written)
                if wrote < 0 && errno == EINTR { continue }
                guard wrote > 0 else { break }
                written += wrote
            }
            return count
        }
        return (result, String(decoding: bytes.prefix(count), as: UTF8.self))
    }

    /// The lines of `text` that fusermount3 ("fusermount3: ...") and libfuse ("fuse:
    /// ...") wrote, in one line; nil if none. Other lines are the daemon's own log,
    /// written by its threads meanwhile.
    static func fuseReason(in text: String?) -> String? {
        guard let text else { return nil }
        let lines = text.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }
            .filter { $0.hasPrefix("fusermount3:") || $0.hasPrefix("fuse:") }
        return lines.isEmpty ? nil : lines.joined(separator: "; ")
    }
}
