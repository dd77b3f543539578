// An unnamed file made ahead of the next create in a directory where creates come in a
// run (an extract, a build, a copy, a mail spool). Making the O_TMPFILE is the dearest
// step of a create after the link: ext4 allocates and initialises the inode, 6.5 µs of
// the 25 µs of system calls a create costs on this kind of machine. So once a directory
// has had two creates in a row, the worker that answered the second makes the next
// file there while the caller goes on, and the next create takes it instead of waiting
// for one. A spare is empty: no header, no key, no name; it only spares the allocation.
// One never used disappears when it is closed (at the next run elsewhere, at a
// directory's removal, at a full disk, with the daemon), as every unnamed file does,
// and holds one inode meanwhile.
//
// A spare is made as a create would make its file at that moment: in that directory
// (so it gets the directory's group where the directory is set-group-ID, and ext4
// places it beside its siblings) and with that mode, and only where the directory
// passes on no default ACL. A change that could alter what a file made in a directory
// gets (its mode, owner or extended attributes) drops the spare, and a spare made
// across such a change is not kept.
import BlockStore
import Glibc
import Synchronization

final class SpareFiles: Sendable {
    private struct Spare {
        let directory: Inode
        let mode: mode_t
        let fd: Int32
        /// CLOCK_MONOTONIC_COARSE when it was made, in milliseconds.
        let made: Int
    }

    /// Age past which a spare taken gets its times set to now: a new file's times are
    /// when it was created, not when its inode was.
    static let staleTimesMilliseconds = 10

    private static func milliseconds() -> Int {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC_COARSE, &now)
        return now.tv_sec * 1000 + now.tv_nsec / 1_000_000
    }

    private struct State {
        var spare: Spare?
        /// Where the last create was: a second create there in a row starts a run.
        var lastDirectory: Inode?
        var lastMode: mode_t = 0
        /// Counts the discards, so a spare made across one is not kept.
        var generation: UInt64 = 0
    }

    private let state = Mutex(State())

    /// The spare made in `directory` with `mode`, now the caller's to name or close.
    func take(in directory: Inode, mode: mode_t) -> Int32? {
        let taken = state.withLock { state -> Spare? in
            guard let spare = state.spare, spare.directory === directory, spare.mode == mode else { return nil }
            state.spare = nil
            return spare
        }
        guard let taken else { return nil }
        if Self.milliseconds() - taken.made > Self.staleTimesMilliseconds {
            let now = [timespec(tv_sec: 0, tv_nsec: TimeSpecial.now), timespec(tv_sec: 0, tv_nsec: TimeSpecial.now)]
            guard futimens(taken.fd, now) == 0 else { close(taken.fd); return nil }
        }
        return taken.fd
    }

    /// Called once a create in `directory` with `mode` is answered: makes the spare
    /// (with `make`) if this create continues a run there, and closes a spare left for
    /// another directory or mode.
    func created(in directory: Inode, mode: mode_t, make: () -> Int32) {
        let (generation, wanted, stale) = state.withLock { state -> (UInt64, Bool, Int32?) in
            let continues = state.lastDirectory === directory && state.lastMode == mode
            state.lastDirectory = directory
            state.lastMode = mode
            var stale: Int32?
            if let spare = state.spare, spare.directory !== directory || spare.mode != mode {
                stale = spare.fd
                state.spare = nil
            }
            return (state.generation, continues && state.spare == nil, stale)
        }
        if let stale { close(stale) }
        guard wanted else { return }
        let fd = make()
        guard fd >= 0 else { return }
        let made = Self.milliseconds()
        let kept = state.withLock { state -> Bool in
            guard state.generation == generation, state.spare == nil else { return false }
            state.spare = Spare(directory: directory, mode: mode, fd: fd, made: made)
            return true
        }
        if !kept { close(fd) }
    }

    /// Closes the spare and ends the run: what a file made in some directory gets may
    /// have changed, or the disk is full and the spare's inode is wanted.
    func discard() {
        let fd = state.withLock { state -> Int32? in
            state.generation &+= 1
            state.lastDirectory = nil
            defer { state.spare = nil }
            return state.spare?.fd
        }
        if let fd { close(fd) }
    }
}
