// What backup and restore tell a person watching: a progress line on a terminal, and
// counts in words.
import Foundation
import Glibc

/// "1 file", "2 files".
func counted(_ count: Int, _ noun: String) -> String { "\(count) \(noun)\(count == 1 ? "" : "s")" }

/// A line on stderr, rewritten in place, while a long backup or restore runs; only
/// when stderr is a terminal, and at most five times a second.
final class ProgressLine {
    private let enabled = isatty(STDERR_FILENO) != 0
    private var last = ContinuousClock.now
    private var shown = false

    func update(_ text: @autoclosure () -> String) {
        guard enabled, ContinuousClock.now - last >= .milliseconds(200) else { return }
        last = ContinuousClock.now
        shown = true
        FileHandle.standardError.write(Data("\r\u{1B}[K\(text())".utf8))
    }

    func end() {
        guard shown else { return }
        FileHandle.standardError.write(Data("\r\u{1B}[K".utf8))
        shown = false
    }

    static func size(_ bytes: UInt64) -> String {
        bytes < 1 << 20 ? "\(bytes / 1024) KiB" : String(format: "%.1f MiB", Double(bytes) / 1_048_576)
    }
}
