// An unnamed file made ahead of the next create in a directory where creates come in a
// run (an extract, a build, a copy, a mail spool). Making the O_TMPFILE and writing its
// header are the dearest steps of a create after the link: ext4 allocates and
// initialises the inode, and the header with its sealed empty block takes a key, its
// wrap and a write (docs/design.md has their share of a create). So once a directory has
// had two creates in a row, the worker that answered the second makes the next files
// there (`depth` of them), in the class the directory passes on, while the caller goes
// on, and each later create takes one instead of waiting for it, and its worker makes
// another. A spare has no name and no name tag until then. Its file key waits in locked
// memory; a lock or restart drops every spare (revoke, right after the class keys go),
// and a create takes a spare's header only while its class can still take a new file, so
// none is made from a spare once its class is gone. One never used disappears when it is
// closed (at the next create elsewhere, at a directory's removal, at a full disk, with
// the daemon), as every unnamed file does, and holds an inode and a block meanwhile: a
// node or header that cannot be made for want of space gets them back
// (SandboxFileSystem.makingNode).
//
// A spare is made as a create would make its file at that moment: in that directory (so
// it gets the directory's group where the directory is set-group-ID, and ext4 places it
// beside its siblings) and with that mode, and only where the directory passes on no
// default ACL (checked again when it is taken). A change that could alter what a file
// made in a directory gets (its mode or owner, an ACL) drops the spares, before the
// change and again once it is made: a spare made meanwhile (by a create answered before
// the change, whose worker went on after it) is then dropped too.
import BlockStore
import DataProtection
import Glibc
import Synchronization
import SystemCalls

/// A spare's header and empty last block, written in the class its directory passed on
/// when it was made, and the file key they wrap (wiped with the spare); and the file's
/// handle, read then, so that the create's new entry asks for none.
struct SpareContents {
    let protectionClass: ProtectionClass
    let header: FileHeader
    let key: SecureBuffer
    let handle: KernelFileHandle?
}

final class SpareFiles: Sendable {
    private struct Spare {
        let directory: Inode
        let mode: mode_t
        let fd: Int32
        /// nil when the class could not take a new file then: the create writes them.
        let contents: SpareContents?

        func close() {
            contents?.key.wipe()
            Glibc.close(fd)
        }
    }

    private struct State {
        /// Made for the run in `lastDirectory` with `lastMode`, the oldest first.
        var ready: [Spare] = []
        /// Being made now, by workers that answered creates of the run.
        var making = 0
        /// Of those, the ones a discard came after: their makers close them.
        var outdated = 0
        /// Where the last create was: a second create there in a row starts a run.
        var lastDirectory: Inode?
        var lastMode: mode_t = 0
        /// Counts the discards, so a spare made across one is not kept.
        var generation: UInt64 = 0

        /// Counts one more spare as being made, if the run has fewer than `depth`
        /// ready or being made: the generation it is made in.
        mutating func reserve() -> UInt64? {
            guard ready.count + making < SpareFiles.depth else { return nil }
            making += 1
            return generation
        }
    }

    /// How many spares a run keeps ahead. With one, the caller's next create often came
    /// while its spare was still being made and made its own file: 23 % of a run of
    /// 10,000 creates on this kind of machine.
    static let depth = 2

    private let state = Mutex(State())

    /// A spare made in `directory` with `mode`, now the caller's to name or close (and
    /// whose key it wipes when it does not use it).
    func take(in directory: Inode, mode: mode_t) -> (fd: Int32, contents: SpareContents?)? {
        let taken = state.withLock { state -> Spare? in
            guard let index = state.ready.firstIndex(where: { $0.directory === directory && $0.mode == mode }) else { return nil }
            return state.ready.remove(at: index)
        }
        guard let taken else { return nil }
        // A new file's times are when it is created, not when its inode was.
        let now = [timespec(tv_sec: 0, tv_nsec: TimeSpecial.now), timespec(tv_sec: 0, tv_nsec: TimeSpecial.now)]
        guard futimens(taken.fd, now) == 0 else { taken.close(); return nil }
        return (taken.fd, taken.contents)
    }

    /// Called once a create in `directory` with `mode` is answered: if this create
    /// continues a run there, makes spares (with `make`) until the run has `depth` of
    /// them ready or being made; closes the spares of a run that ended.
    func created(in directory: Inode, mode: mode_t, make: () -> (fd: Int32, contents: SpareContents?)) {
        var reserved: UInt64?
        let stale = state.withLock { state -> [Spare] in
            let continues = state.lastDirectory === directory && state.lastMode == mode
            state.lastDirectory = directory
            state.lastMode = mode
            guard continues else {
                defer { state.ready = [] }
                return state.ready
            }
            reserved = state.reserve()
            return []
        }
        for spare in stale { spare.close() }
        while let generation = reserved {
            let made = make()
            let spare = made.fd >= 0 ? Spare(directory: directory, mode: mode, fd: made.fd, contents: made.contents) : nil
            let kept = state.withLock { state -> Bool in
                guard let spare, state.generation == generation, state.ready.count < Self.depth,
                      state.lastDirectory === directory, state.lastMode == mode else { return false }
                state.making -= 1
                state.ready.append(spare)
                reserved = state.reserve()
                return true
            }
            guard !kept else { continue }
            // Counted as being made until closed: a discard waits for that.
            spare?.close()
            state.withLock { state in
                state.making -= 1
                if state.generation != generation { state.outdated -= 1 }
            }
            reserved = nil
        }
    }

    /// Closes the spares and ends the run: what a file made in some directory gets may
    /// have changed, a class key is going, or the disk is full and the spares' inodes
    /// are wanted. A spare being made meanwhile is closed by its maker, once made; this
    /// waits for that (its inode free, its key wiped), up to 50 ms. Whether there was
    /// a spare, ready or being made; errno is kept.
    @discardableResult
    func discard() -> Bool {
        let (spares, inFlight) = state.withLock { state -> ([Spare], Bool) in
            state.generation &+= 1
            state.lastDirectory = nil
            state.outdated = state.making
            defer { state.ready = [] }
            return (state.ready, state.making > 0)
        }
        guard !spares.isEmpty || inFlight else { return false }
        let saved = errno
        for spare in spares { spare.close() }
        if inFlight { waitForOutdatedSpares() }
        errno = saved
        return true
    }

    /// Making a spare takes tens of microseconds; the bound is for a maker that cannot
    /// finish before the caller goes on (the caller itself, inside `make`).
    private func waitForOutdatedSpares() {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        let deadline = now.tv_sec * 1_000_000_000 + now.tv_nsec + 50_000_000
        while state.withLock({ $0.outdated }) > 0 {
            clock_gettime(CLOCK_MONOTONIC, &now)
            if now.tv_sec * 1_000_000_000 + now.tv_nsec > deadline { return }
            usleep(20)
        }
    }
}
