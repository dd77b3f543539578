// Reads a passcode from a file, stdin or a terminal prompt straight into locked memory (the caller's kind, SecretBytes):
// the first line, without its newline (or up to a NUL). Never through argv, String or Data.
import Foundation
import Glibc

public enum PasscodeInput {
    static let maxLength = 1024

    /// The first line of a passcode file, which only its owner may access (SecretInput);
    /// `what` names it in errors (a backup's "password file").
    public static func read<Secret: AllocatedSecret>(file path: String, what: String = "passcode file") throws(SecretInputError) -> Secret {
        let fd = try SecretInput.openFile(path, what: what)
        defer { close(fd) }
        return try firstLine(of: fd, source: path, secret: what.hasSuffix(" file") ? String(what.dropLast(5)) : what)
    }

    /// From stdin when it is not a terminal, else from a prompt with echo off.
    public static func readStandardInput<Secret: AllocatedSecret>(prompt: String) throws(SecretInputError) -> Secret {
        guard isatty(STDIN_FILENO) != 0 else { return try firstLine(of: STDIN_FILENO, source: "stdin") }
        var saved = termios()
        tcgetattr(STDIN_FILENO, &saved)
        var silent = saved
        silent.c_lflag &= ~tcflag_t(ECHO)
        // Echo goes off (dropping what was typed before) before the prompt shows, so
        // nothing typed after the prompt is lost.
        tcsetattr(STDIN_FILENO, TCSAFLUSH, &silent)
        FileHandle.standardError.write(Data(prompt.utf8))
        defer {
            tcsetattr(STDIN_FILENO, TCSAFLUSH, &saved)
            FileHandle.standardError.write(Data("\n".utf8))
        }
        return try firstLine(of: STDIN_FILENO, source: "the prompt")
    }

    /// Reads byte by byte so nothing past the first line is consumed or copied.
    /// `secret` names what is read in errors ("passcode", a backup's "password").
    static func firstLine<Secret: AllocatedSecret>(of fd: Int32, source: String,
                                                   secret: String = "passcode") throws(SecretInputError) -> Secret {
        let scratch = Secret(count: maxLength + 1)
        let bytes = scratch.mutableBytes
        var length = 0
        while length <= maxLength {
            let n = Glibc.read(fd, bytes.start + length, 1)
            if n < 0 && errno == EINTR { continue }
            if n < 0 { throw .readFailed(source: source, reason: String(cString: strerror(errno))) }
            // pam_exec's expose_authtok ends the password with a NUL, not a newline.
            if n == 0 || bytes[length] == UInt8(ascii: "\n") || bytes[length] == 0 { break }
            length += 1
        }
        guard length <= maxLength else { throw .tooLong(what: secret, source: source, limit: maxLength) }
        if length > 0 && bytes[length - 1] == UInt8(ascii: "\r") { length -= 1 }
        guard length > 0 else { throw .empty(what: secret, source: source) }
        return Secret.copying(UnsafeRawBufferPointer(rebasing: scratch.bytes[0..<length]))
    }
}
