// Where secrets come in from outside: files and stdin, read straight into locked memory.
// A file holding a secret must be the caller's alone: like ssh with a private key, a
// regular file that group or others may access in any way is refused (it could have
// been read, or planted); a pipe (<(…), stdin) is fine.
import Foundation
import Glibc

public enum SecretInputError: Error, CustomStringConvertible {
    case unreadable(what: String, path: String, reason: String)
    case accessibleByOthers(what: String, path: String, mode: mode_t)
    case notFileOrPipe(what: String, path: String)
    case readFailed(source: String, reason: String)
    case empty(what: String, source: String)
    case tooLong(what: String, source: String, limit: Int)

    public var description: String {
        switch self {
        case .unreadable(let what, let path, let reason): return "cannot read \(what) \(path): \(reason)"
        case .accessibleByOthers(let what, let path, let mode):
            return "\(what) \(path) has mode \(String(format: "%04o", mode)); it must not be accessible by group or others (chmod 600 \(path))"
        case .notFileOrPipe(let what, let path): return "\(what) \(path) is neither a regular file nor a pipe; refusing it"
        case .readFailed(let source, let reason): return "cannot read from \(source): \(reason)"
        case .empty(let what, let source): return "the \(what) from \(source) is empty"
        case .tooLong(let what, let source, let limit): return "the \(what) from \(source) is longer than \(limit) bytes"
        }
    }
}

public enum SecretInput {
    /// Opens a file that holds a secret (`what`: "passcode file", "data file"); the
    /// checks are made on the opened descriptor, so they hold for what is read.
    public static func openFile(_ path: String, what: String) throws(SecretInputError) -> Int32 {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw .unreadable(what: what, path: path, reason: String(cString: strerror(errno))) }
        var info = stat()
        guard fstat(fd, &info) == 0 else {
            let reason = String(cString: strerror(errno))
            close(fd)
            throw .unreadable(what: what, path: path, reason: reason)
        }
        switch info.st_mode & S_IFMT {
        case S_IFIFO:
            return fd
        case S_IFREG where info.st_mode & 0o077 == 0:
            return fd
        case S_IFREG:
            close(fd)
            throw .accessibleByOthers(what: what, path: path, mode: info.st_mode & 0o7777)
        default:
            close(fd)
            throw .notFileOrPipe(what: what, path: path)
        }
    }

    /// Everything `fd` holds until end of file (binary, newlines included), at most
    /// `limit` bytes; `what` and `source` name it in errors ("data", "stdin").
    public static func readAll<Secret: AllocatedSecret>(_ fd: Int32, what: String, source: String, limit: Int) throws(SecretInputError) -> Secret {
        let scratch = Secret(count: limit + 1)
        let bytes = scratch.mutableBytes
        var length = 0
        while length <= limit {
            let n = Glibc.read(fd, bytes.start + length, limit + 1 - length)
            if n < 0 && errno == EINTR { continue }
            if n < 0 { throw .readFailed(source: source, reason: String(cString: strerror(errno))) }
            if n == 0 { break }
            length += n
        }
        guard length <= limit else { throw .tooLong(what: what, source: source, limit: limit) }
        return Secret.copying(UnsafeRawBufferPointer(rebasing: scratch.bytes[0..<length]))
    }
}
