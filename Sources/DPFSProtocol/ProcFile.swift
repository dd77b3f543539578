// Reads a file of /proc or /sys whole. Such files report a size of zero and are made
// as they are read, a page or so per read: a reader that trusts the size, or stops
// after one read, sees the first few KiB only (a long mount table, say).
import Glibc

public enum ProcFile {
    /// The whole of the file at `path`, or nil if it cannot be opened or read.
    public static func read(_ path: String) -> String? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = chunk.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
            if n < 0 && errno == EINTR { continue }
            if n < 0 { return nil }
            if n == 0 { break }
            bytes.append(contentsOf: chunk[0..<n])
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}
