// SIGINT, SIGTERM and SIGHUP during a backup or restore are noted, not fatal: the
// command stops at its next piece and removes what it made (the temporary backup
// file; the half-made device, its mount and its secret-store entries), where dying at
// once would leave them behind.
import Glibc
import Synchronization

enum Interruption {
    private static let signalled = Atomic<Int32>(0)

    static func catchSignals() {
        for caught in [SIGINT, SIGTERM, SIGHUP] {
            signal(caught) { Interruption.signalled.store($0, ordering: .relaxed) }
        }
    }

    /// Throws once a signal came.
    static func check() throws {
        let caught = signalled.load(ordering: .relaxed)
        guard caught == 0 else { throw CLIError("interrupted by signal \(caught); nothing was kept") }
    }
}
