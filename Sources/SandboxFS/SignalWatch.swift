// Stopping signals (SIGTERM from a service manager or a shutdown, SIGINT, SIGHUP), heard
// in place of libfuse's handlers. Those ended the session at once: the daemon unmounted
// (lazily, with files busy) and exited, its protected files still in the kernel's page
// cache and mappings, and no lock possible any more. Here a thread hears the signal,
// runs `beforeStop` while the session still serves (a revocation may need it: a
// mapping's dirty pages are written back through it), then ends the loop.
import FuseLoop
import Glibc

final class SignalWatch {
    private let thread: WakeableThread

    /// Nil when no pipe could be made, the handlers not installed or no thread started
    /// (the default actions then stay: a signal ends the daemon at once).
    init?(session: OpaquePointer, beforeStop: @escaping @Sendable (Int32) -> Void) {
        guard let thread = WakeableThread() else { return nil }
        guard dpfs_loop_catch_signals(thread.writeEnd) == 0 else {
            dpfs_loop_release_signals()
            thread.discard()
            return nil
        }
        self.thread = thread
        let session = UncheckedSession(pointer: session)
        let started = thread.start { readEnd in
            var byte: UInt8 = 0
            var got = -1
            repeat { got = read(readEnd, &byte, 1) } while got < 0 && errno == EINTR
            // A zero byte is finish's: the session ended without a signal.
            guard got == 1 && byte != 0 else { return }
            beforeStop(Int32(byte))
            dpfs_loop_stop(session.pointer)
        }
        // No thread to hear them: the default actions back, then the pipe closed.
        guard started else {
            dpfs_loop_release_signals()
            thread.discard()
            return nil
        }
    }

    /// After the loop: the default actions back, and the thread ended.
    func finish() {
        dpfs_loop_release_signals()
        thread.finish()
    }
}

/// The session's pointer, handed to the watch's thread; libfuse's calls on it that
/// the thread makes (exit) are made for signal handlers, from any thread.
private struct UncheckedSession: @unchecked Sendable {
    let pointer: OpaquePointer
}
