// fusermount3 mounts for a user other than root and refuses allow_other and allow_root
// unless /etc/fuse.conf says user_allow_other. Its reason reaches only the daemon's
// log, and libfuse then reports a bare failure: the mount checks first and names it.
import Foundation
import Glibc

enum UserAllowOther {
    static let fuseConf = "/etc/fuse.conf"

    /// Throws when a caller other than root asks for allow_other or allow_root and
    /// fuse.conf does not allow it. A fuse.conf the caller may not read is left to
    /// fusermount3, which reads it as root.
    static func check(_ options: [String]) throws(CLIError) {
        guard getuid() != 0 else { return }
        let names = options.flatMap { $0.split(separator: ",") }.map(String.init)
        guard let asked = names.first(where: { $0 == "allow_other" || $0 == "allow_root" }) else { return }
        guard !allowed() else { return }
        throw CLIError("-o \(asked) is allowed to a user other than root only if \(fuseConf) has the line "
                       + "user_allow_other (fusermount3 refuses it otherwise); root may add it", status: .usage)
    }

    /// Whether fuse.conf has user_allow_other, read as fusermount3 reads it: what
    /// follows a # is a comment, and a line is trimmed of white space. An unreadable
    /// file counts as allowing; a missing one does not.
    static func allowed() -> Bool {
        guard let data = FileManager.default.contents(atPath: fuseConf) else { return access(fuseConf, F_OK) == 0 }
        return String(decoding: data, as: UTF8.self).split(separator: "\n").contains { line in
            let setting = line.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false)[0]
            return setting.trimmingCharacters(in: .whitespaces) == "user_allow_other"
        }
    }
}
