// Whether bwrap, which makes `dpfs run`'s sandbox, can be started: asked before anything
// runs, so that a machine without bubblewrap gets one line that says what to install,
// once (under `dpfs test`, not once per run of the test bundle), and the status for a
// sandbox that cannot be made (126), not the one for a program that is not found (127).
import ArgumentParser
import Foundation
import Glibc

enum BubblewrapCheck {
    static let missing = "Error: bwrap (bubblewrap) is not installed: install the bubblewrap package, "
        + "or give --no-isolation to run without the sandbox"

    /// Exits 126 with `missing` unless bwrap is on PATH.
    static func requireInstalled() throws {
        guard isInstalled() else {
            FileHandle.standardError.write(Data((missing + "\n").utf8))
            throw ExitCode(126)
        }
    }

    /// Whether an executable file named bwrap is on PATH, as posix_spawnp searches it
    /// (this process's PATH; glibc's default when it is unset; an empty entry is the
    /// working directory).
    static func isInstalled() -> Bool {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/bin:/usr/bin"
        return path.split(separator: ":", omittingEmptySubsequences: false).contains { entry in
            let candidate = (entry.isEmpty ? "." : String(entry)) + "/bwrap"
            var info = stat()
            return stat(candidate, &info) == 0 && info.st_mode & S_IFMT == S_IFREG && access(candidate, X_OK) == 0
        }
    }
}
