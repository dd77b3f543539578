// What holds a mount that its own holders' search cannot see: the `dpfs run` (and
// `dpfs test`) programs, which work in the mount from a mount namespace of their own,
// as the daemon lists the processes that hold their app sessions (AppRun). Each is
// named by pid and by its command line as /proc shows it to the caller.
import DPFSProtocol
import Foundation

enum AppRunHolders {
    /// Where a command line is cut, so that one long command leaves the line readable.
    static let commandLimit = 200

    /// "dpfs run /m -- sh -c sleep 75 (pid 12)", at most `shown` named.
    static func describe(_ runs: [AppRun], shown: Int = 3) -> String {
        let named = runs.prefix(shown).map(name)
        let more = runs.count > shown ? " and \(runs.count - shown) more" : ""
        return named.joined(separator: ", ") + more
    }

    /// "dpfs run /m -- sh -c sleep 75 (pid 12)".
    static func name(_ run: AppRun) -> String {
        "\(commandLine(of: run.pid) ?? "a program run as \(run.app)") (pid \(run.pid))"
    }

    /// Its arguments, separated by spaces and cut at `commandLimit`; nil if /proc shows none.
    static func commandLine(of pid: Int32) -> String? {
        guard pid > 0, let bytes = FileManager.default.contents(atPath: "/proc/\(pid)/cmdline") else { return nil }
        let words = bytes.split(separator: 0).map { String(decoding: $0, as: UTF8.self) }
        guard !words.isEmpty else { return nil }
        let line = words.joined(separator: " ")
        return line.count > commandLimit ? String(line.prefix(commandLimit - 1)) + "…" : line
    }
}
