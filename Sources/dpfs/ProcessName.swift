// The kernel names a process after the file it was executed from, and the daemon and
// its watch are started through /proc/self/exe (the running binary, even once a newer
// one is installed over it): they would be "exe" to `pgrep dpfs`, `ps -C dpfs`,
// `killall dpfs` and `top`. Such a process takes its argv[0]'s name instead.
import CLinux
import Foundation
import Glibc

enum ProcessName {
    static func adoptCommandName() {
        var current = [CChar](repeating: 0, count: 16)
        guard dpfs_thread_name(&current) == 0,
              String(decoding: current.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self) == "exe",
              let first = CommandLine.arguments.first else { return }
        let name = (first as NSString).lastPathComponent
        guard !name.isEmpty else { return }
        // The kernel keeps 15 bytes of a name.
        dpfs_name_thread(String(decoding: name.utf8.prefix(15), as: UTF8.self))
    }
}
