// Path arguments as the kernel passed them: bytes. ArgumentParser works on
// CommandLine.arguments, Strings whose decoding replaced each byte that is not UTF-8
// with U+FFFD, so a file whose name is not UTF-8 (a name is any bytes but "/" and
// NUL) reaches a command under a name no file has.
import Glibc

/// One path argument: the bytes to hand the system, and the text to show a person.
struct RawPath {
    /// NUL-terminated, as the C calls take it.
    let bytes: [CChar]
    let display: String

    /// The bytes without their NUL, to write out.
    var unterminated: [UInt8] { bytes.dropLast().map { UInt8(bitPattern: $0) } }
}

enum RawArguments {
    /// The raw arguments behind `parsed`, the values ArgumentParser gave the trailing
    /// positional arguments, in order. Matched from the end of argv by their decoding:
    /// only such a value or "--" can follow them there. A value not found (none should
    /// be) keeps its decoded bytes.
    static func paths(_ parsed: [String]) -> [RawPath] {
        let argv = (1..<Int(CommandLine.argc)).compactMap { CommandLine.unsafeArgv[$0] }.map { argument in
            Array(UnsafeBufferPointer(start: argument, count: strlen(argument) + 1))
        }
        var index = argv.count - 1
        var found: [RawPath] = []
        for value in parsed.reversed() {
            while index >= 0 && decoded(argv[index]) != value { index -= 1 }
            found.append(RawPath(bytes: index >= 0 ? argv[index] : Array(value.utf8CString), display: value))
            index -= 1
        }
        return found.reversed()
    }

    /// The argument as CommandLine.arguments decodes it.
    private static func decoded(_ argument: [CChar]) -> String {
        String(decoding: argument.dropLast().map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
