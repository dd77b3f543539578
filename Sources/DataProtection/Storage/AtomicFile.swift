// Crash-atomic replacement of small metadata files: write a temporary sibling, fsync it,
// rename it over the target, fsync the directory. A kill -9 or power cut at any instant
// leaves the old or the new contents, never a mix.
import Foundation
import Glibc

public struct SystemError: Error, CustomStringConvertible {
    public let operation: String
    public let path: String
    public let code: Int32
    public init(_ operation: String, _ path: String, code: Int32 = errno) {
        self.operation = operation; self.path = path; self.code = code
    }
    public var description: String { "\(operation) \(path): \(String(cString: strerror(code)))" }
}

public enum AtomicFile {
    public static func write(_ bytes: [UInt8], to path: String, mode: mode_t = 0o600) throws(SystemError) {
        let temporary = temporaryPath(of: path)
        let fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode)
        guard fd >= 0 else { throw SystemError("create", temporary) }
        var ok = true
        var failure = SystemError("write", temporary, code: 0)
        bytes.withUnsafeBytes { buffer in
            var done = 0
            while done < buffer.count {
                let n = Glibc.write(fd, buffer.start + done, buffer.count - done)
                if n < 0 { if errno == EINTR { continue }; failure = SystemError("write", temporary); ok = false; return }
                done += n
            }
        }
        if ok && fsync(fd) != 0 { failure = SystemError("fsync", temporary); ok = false }
        close(fd)
        guard ok else { unlink(temporary); throw failure }
        guard rename(temporary, path) == 0 else {
            let error = SystemError("rename", path); unlink(temporary); throw error
        }
        try syncDirectory(of: path)
    }

    public static func syncDirectory(of path: String) throws(SystemError) {
        let directory = (path as NSString).deletingLastPathComponent
        let fd = open(directory.isEmpty ? "." : directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { throw SystemError("open", directory) }
        defer { close(fd) }
        guard fsync(fd) == 0 else { throw SystemError("fsync", directory) }
    }

    public static func read(_ path: String) throws(SystemError) -> [UInt8] {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw SystemError("read", path, code: access(path, R_OK) == 0 ? EIO : errno)
        }
        return [UInt8](data)
    }

    /// The whole file, or nil when it holds more than `limit` bytes: a small file of
    /// ours grown by another hand must not take the process's memory to find out.
    public static func read(_ path: String, atMost limit: Int) throws(SystemError) -> [UInt8]? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw SystemError("open", path) }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0 else { throw SystemError("stat", path) }
        guard info.st_size <= limit else { return nil }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(Int(info.st_size))
        var chunk = [UInt8](repeating: 0, count: 65_536)
        while bytes.count <= limit {
            let n = chunk.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
            if n < 0 { if errno == EINTR { continue }; throw SystemError("read", path) }
            if n == 0 { return bytes }
            bytes += chunk[..<n]
        }
        return nil
    }

    /// Reads a small secret file straight into locked memory.
    public static func readSecret(_ path: String, count: Int) throws(SystemError) -> SecureBuffer {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw SystemError("open", path) }
        defer { close(fd) }
        let secret = SecureBuffer(count: count)
        let n = pread(fd, secret.mutableBytes.start, count, 0)
        guard n == count else { throw SystemError("read", path, code: n < 0 ? errno : EIO) }
        return secret
    }

    /// Writes a new secret file durably, refusing to replace an existing one.
    public static func createSecret(_ secret: SecureBuffer, at path: String) throws(SystemError) {
        let fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw SystemError("create", path) }
        defer { close(fd) }
        guard Glibc.write(fd, secret.bytes.start, secret.count) == secret.count, fsync(fd) == 0 else {
            throw SystemError("write", path)
        }
        try syncDirectory(of: path)
    }
}
