// Reads a passcode from a file, stdin or a terminal prompt straight into locked memory:
// the first line, without its newline. Never through argv, String or Data.
import Foundation
import Glibc

public enum PasscodeInputError: Error, CustomStringConvertible {
    case unreadable(path: String, reason: String)
    case unsafeFile(path: String)
    case empty(source: String)
    case tooLong(source: String)

    public var description: String {
        switch self {
        case .unreadable(let path, let reason): return "cannot read passcode file \(path): \(reason)"
        case .unsafeFile(let path):
            return "passcode file \(path) is writable by others or not a regular file; refusing it"
        case .empty(let source): return "the passcode from \(source) is empty"
        case .tooLong(let source): return "the passcode from \(source) is longer than 1024 bytes"
        }
    }
}

public enum PasscodeInput {
    static let maxLength = 1024

    public static func read(file path: String) throws -> SecureBuffer {
        var info = stat()
        guard stat(path, &info) == 0 else {
            throw PasscodeInputError.unreadable(path: path, reason: String(cString: strerror(errno)))
        }
        let isRegular = (info.st_mode & S_IFMT) == S_IFREG
        let isPipe = (info.st_mode & S_IFMT) == S_IFIFO
        // A regular file anyone may write could have been planted; pipes (<(…)) are fine.
        guard isPipe || (isRegular && info.st_mode & S_IWOTH == 0) else {
            throw PasscodeInputError.unsafeFile(path: path)
        }
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else {
            throw PasscodeInputError.unreadable(path: path, reason: String(cString: strerror(errno)))
        }
        defer { close(fd) }
        return try firstLine(of: fd, source: path)
    }

    /// From stdin when it is not a terminal, else from a prompt with echo off.
    public static func readStandardInput(prompt: String) throws -> SecureBuffer {
        guard isatty(STDIN_FILENO) != 0 else { return try firstLine(of: STDIN_FILENO, source: "stdin") }
        var saved = termios()
        tcgetattr(STDIN_FILENO, &saved)
        var silent = saved
        silent.c_lflag &= ~tcflag_t(ECHO)
        FileHandle.standardError.write(Data(prompt.utf8))
        tcsetattr(STDIN_FILENO, TCSAFLUSH, &silent)
        defer {
            tcsetattr(STDIN_FILENO, TCSAFLUSH, &saved)
            FileHandle.standardError.write(Data("\n".utf8))
        }
        return try firstLine(of: STDIN_FILENO, source: "the prompt")
    }

    /// Reads byte by byte so nothing past the first line is consumed or copied.
    static func firstLine(of fd: Int32, source: String) throws -> SecureBuffer {
        let scratch = SecureBuffer(count: maxLength + 1)
        let bytes = scratch.mutableBytes
        var length = 0
        while length <= maxLength {
            let n = Glibc.read(fd, bytes.start + length, 1)
            if n < 0 && errno == EINTR { continue }
            if n < 0 { throw PasscodeInputError.unreadable(path: source, reason: String(cString: strerror(errno))) }
            if n == 0 || bytes[length] == UInt8(ascii: "\n") { break }
            length += 1
        }
        guard length <= maxLength else { throw PasscodeInputError.tooLong(source: source) }
        if length > 0 && bytes[length - 1] == UInt8(ascii: "\r") { length -= 1 }
        guard length > 0 else { throw PasscodeInputError.empty(source: source) }
        return SecureBuffer(copying: UnsafeRawBufferPointer(rebasing: scratch.bytes[0..<length]))
    }
}
