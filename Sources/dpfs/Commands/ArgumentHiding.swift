// A password in an argument shows in the process list (ps, /proc/PID/cmdline) to every
// local user for as long as the command runs. Once the command has parsed its
// arguments, it overwrites such a value where the kernel reads the list from, its own
// argv. Only the moment from exec to parsing stays exposed; a password file keeps the
// password out altogether.
import Glibc

enum ArgumentHiding {
    /// Overwrites with "*" the value of each `--NAME VALUE` and `--NAME=VALUE` of argv.
    /// Works on the C strings in place: the value never becomes a Swift String here.
    static func hideValues(of option: String) {
        let flag = Array(("--" + option).utf8CString)  // NUL-terminated
        let count = Int(CommandLine.argc)
        var index = 1
        while index < count, let argument = CommandLine.unsafeArgv[index] {
            if strcmp(argument, "--") == 0 { return }
            if strcmp(argument, flag) == 0 {
                if index + 1 < count, let value = CommandLine.unsafeArgv[index + 1] { blank(value) }
                index += 2
                continue
            }
            let prefix = flag.count - 1
            if strncmp(argument, flag, prefix) == 0 && argument[prefix] == CChar(UInt8(ascii: "=")) {
                blank(argument + prefix + 1)
            }
            index += 1
        }
    }

    private static func blank(_ text: UnsafeMutablePointer<CChar>) {
        memset(text, Int32(UInt8(ascii: "*")), strlen(text))
    }
}
