// Stopping signals (SIGTERM from a service manager or a shutdown, SIGINT, SIGHUP), heard
// in place of libfuse's handlers. Those ended the session at once: the daemon unmounted
// (lazily, with files busy) and exited, its protected files still in the kernel's page
// cache and mappings, and no lock possible any more. Here a thread hears the signal,
// runs `beforeStop` while the session still serves (a revocation may need it: a
// mapping's dirty pages are written back through it), then ends the loop.
import FuseLoop
import Foundation
import Glibc

final class SignalWatch: @unchecked Sendable {
    private let readEnd: Int32
    private let writeEnd: Int32
    private let done = DispatchSemaphore(value: 0)

    /// Nil when no pipe could be made or the handlers not installed (the default
    /// actions then stay: a signal ends the daemon at once).
    init?(session: OpaquePointer, beforeStop: @escaping @Sendable (Int32) -> Void) {
        var ends: [Int32] = [-1, -1]
        guard pipe(&ends) == 0 else { return nil }
        readEnd = ends[0]
        writeEnd = ends[1]
        _ = fcntl(readEnd, F_SETFD, FD_CLOEXEC)
        _ = fcntl(writeEnd, F_SETFD, FD_CLOEXEC)
        guard dpfs_loop_catch_signals(writeEnd) == 0 else {
            dpfs_loop_release_signals()
            close(readEnd)
            close(writeEnd)
            return nil
        }
        let readEnd = readEnd, done = done
        let session = UncheckedSession(pointer: session)
        Thread.detachNewThread {
            var byte: UInt8 = 0
            var got = -1
            repeat { got = read(readEnd, &byte, 1) } while got < 0 && errno == EINTR
            // A zero byte is finish's: the session ended without a signal.
            if got == 1 && byte != 0 {
                beforeStop(Int32(byte))
                dpfs_loop_stop(session.pointer)
            }
            done.signal()
        }
    }

    /// After the loop: the default actions back, and the thread ended.
    func finish() {
        dpfs_loop_release_signals()
        var zero: UInt8 = 0
        _ = write(writeEnd, &zero, 1)
        done.wait()
        close(readEnd)
        close(writeEnd)
    }
}

/// The session's pointer, handed to the watch's thread; libfuse's calls on it that
/// the thread makes (exit) are made for signal handlers, from any thread.
private struct UncheckedSession: @unchecked Sendable {
    let pointer: OpaquePointer
}
