// Whether a file store's directory, or a secret file in it, is safe: the caller's,
// closed to everyone else, as ssh wants ~/.ssh. When it is not, what is wrong is named
// with its own fix: a store of another user's needs no chmod, and is not helped by one.
import Glibc

enum SecretStoreSafety {
    /// Why `path`, which `info` describes, is not a safe store directory (`isDirectory`)
    /// or secret file; nil when it is.
    static func problem(of path: String, _ info: stat, isDirectory: Bool) -> String? {
        let (kind, mode) = isDirectory ? ("a directory", 0o700) : ("a regular file", 0o600)
        let type = isDirectory ? S_IFDIR : S_IFREG
        guard info.st_mode & S_IFMT == type else { return "\(path) is not \(kind)" }
        var problems: [String] = []
        let me = geteuid()
        if info.st_uid != me {
            problems.append("\(path) is owned by uid \(info.st_uid), not by you (uid \(me)): "
                + "run dpfs as uid \(info.st_uid), or make it yours (chown \(me) \(path))")
        }
        let given = info.st_mode & 0o7777
        if given & 0o077 != 0 {
            problems.append("\(path) has mode \(octal(given)), open to others: "
                + "it must have mode \(octal(mode_t(mode))) (chmod \(String(mode, radix: 8)) \(path))")
        }
        return problems.isEmpty ? nil : problems.joined(separator: "; ")
    }

    /// `mode` as ls and chmod write it, four octal digits.
    private static func octal(_ mode: mode_t) -> String {
        let digits = String(mode, radix: 8)
        return String(repeating: "0", count: max(0, 4 - digits.count)) + digits
    }
}
