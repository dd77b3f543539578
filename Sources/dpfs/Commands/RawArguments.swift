// Arguments as the kernel passed them: bytes. ArgumentParser works on
// CommandLine.arguments, Strings whose decoding replaced each byte that is not UTF-8
// with U+FFFD, so a file whose name is not UTF-8 (a name is any bytes but "/" and
// NUL) reaches a command under a name no file has, and a program `dpfs run` starts
// would get other arguments than its caller gave.
import Glibc

/// One argument: the bytes to hand the system, and the text to show a person.
struct RawArgument {
    /// NUL-terminated, as the C calls take it.
    let bytes: [CChar]
    let display: String

    init(bytes: [CChar], display: String) {
        self.bytes = bytes
        self.display = display
    }

    /// An argument dpfs makes itself.
    init(_ text: String) {
        self.init(bytes: Array(text.utf8CString), display: text)
    }

    /// The bytes without their NUL, to write out.
    var unterminated: [UInt8] { bytes.dropLast().map { UInt8(bitPattern: $0) } }
}

enum RawArguments {
    /// The raw arguments behind `parsed`, the values ArgumentParser gave the trailing
    /// positional arguments, in order. Matched from the end of argv by their decoding:
    /// only such a value or "--" can follow them there. A value not found (none should
    /// be) keeps its decoded bytes.
    static func trailing(_ parsed: [String]) -> [RawArgument] {
        let argv = (1..<Int(CommandLine.argc)).compactMap { CommandLine.unsafeArgv[$0] }.map { argument in
            Array(UnsafeBufferPointer(start: argument, count: strlen(argument) + 1))
        }
        var index = argv.count - 1
        var found: [RawArgument] = []
        for value in parsed.reversed() {
            while index >= 0 && decoded(argv[index]) != value { index -= 1 }
            found.append(index >= 0 ? RawArgument(bytes: argv[index], display: value) : RawArgument(value))
            index -= 1
        }
        return found.reversed()
    }

    /// The argument as CommandLine.arguments decodes it.
    private static func decoded(_ argument: [CChar]) -> String {
        String(decoding: argument.dropLast().map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
