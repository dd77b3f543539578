// A thread that waits on a pipe of its own: whatever it waits for (a signal's number
// written by a handler, or a change of the mount table it polls beside), `finish` ends
// it by writing a zero byte, and waits for it to return.
import DPFSProtocol
import Foundation
import Glibc

final class WakeableThread: @unchecked Sendable {
    /// The pipe's read end, for the body to read or poll; its write end, for
    /// async-signal-safe writers.
    let readEnd: Int32
    let writeEnd: Int32
    private let done = DispatchSemaphore(value: 0)

    /// Nil when no pipe could be made.
    init?() {
        var ends: [Int32] = [-1, -1]
        guard pipe(&ends) == 0 else { return nil }
        readEnd = ends[0]
        writeEnd = ends[1]
        _ = fcntl(readEnd, F_SETFD, FD_CLOEXEC)
        _ = fcntl(writeEnd, F_SETFD, FD_CLOEXEC)
    }

    /// Runs `body` on the thread with the read end; it must return once a zero byte
    /// can be read there. False when no thread could start (`discard` the pipe then).
    func start(_ body: @escaping @Sendable (_ readEnd: Int32) -> Void) -> Bool {
        let readEnd = readEnd, done = done
        let started = try? PosixThread.start(named: "dpfs-watch") {
            body(readEnd)
            done.signal()
        }
        return started != nil
    }

    /// Ends the started thread, waits for it and closes the pipe.
    func finish() {
        var zero: UInt8 = 0
        _ = write(writeEnd, &zero, 1)
        done.wait()
        close(readEnd)
        close(writeEnd)
    }

    /// Closes the pipe of a thread never started.
    func discard() {
        close(readEnd)
        close(writeEnd)
    }
}
