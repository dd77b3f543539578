// An unnamed file made ahead of the next create in a directory where creates come in a
// run (an extract, a build, a copy, a mail spool). Making the O_TMPFILE and writing its
// header are the dearest steps of a create after the link: ext4 allocates and
// initialises the inode, 6.5 µs, and the header with its sealed empty block takes a
// key, its wrap and a write, 5 µs more, of the 25 µs of system calls and the crypto a
// create costs on this kind of machine. So once a directory has had two creates in a
// row, the worker that answered the second makes the next file there, in the class
// the directory passes on, while the caller goes on, and the next create takes it
// instead of waiting for one. It has no name and no name tag until then. Its file key
// waits in locked memory; a lock or restart drops every spare (revoke, right after the
// class keys go), and a create takes a spare's header only while its class can still
// take a new file, so none is made from a spare once its class is gone. One never used
// disappears when it is closed (at the next create elsewhere, at a directory's
// removal, at a full disk, with the daemon), as every unnamed file does, and holds an
// inode and a block meanwhile: a node or header that cannot be made for want of space
// gets them back (SandboxFileSystem.makingNode).
//
// A spare is made as a create would make its file at that moment: in that directory
// (so it gets the directory's group where the directory is set-group-ID, and ext4
// places it beside its siblings) and with that mode, and only where the directory
// passes on no default ACL (checked again when it is taken). A change that could alter
// what a file made in a directory gets (its mode or owner, an ACL) drops the spare,
// before the change and again once it is made: a spare made meanwhile (by a create
// answered before the change, whose worker went on after it) is then dropped too.
import BlockStore
import DataProtection
import Glibc
import Synchronization

/// A spare's header and empty last block, written in the class its directory passed on
/// when it was made, and the file key they wrap (wiped with the spare).
struct SpareContents {
    let protectionClass: ProtectionClass
    let header: FileHeader
    let key: SecureBuffer
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
        var spare: Spare?
        /// Where the last create was: a second create there in a row starts a run.
        var lastDirectory: Inode?
        var lastMode: mode_t = 0
        /// Counts the discards, so a spare made across one is not kept.
        var generation: UInt64 = 0
    }

    private let state = Mutex(State())

    /// The spare made in `directory` with `mode`, now the caller's to name or close
    /// (and whose key it wipes when it does not use it).
    func take(in directory: Inode, mode: mode_t) -> (fd: Int32, contents: SpareContents?)? {
        let taken = state.withLock { state -> Spare? in
            guard let spare = state.spare, spare.directory === directory, spare.mode == mode else { return nil }
            state.spare = nil
            return spare
        }
        guard let taken else { return nil }
        // A new file's times are when it is created, not when its inode was.
        let now = [timespec(tv_sec: 0, tv_nsec: TimeSpecial.now), timespec(tv_sec: 0, tv_nsec: TimeSpecial.now)]
        guard futimens(taken.fd, now) == 0 else { taken.close(); return nil }
        return (taken.fd, taken.contents)
    }

    /// Called once a create in `directory` with `mode` is answered: makes the spare
    /// (with `make`) if this create continues a run there, and closes a spare left for
    /// another directory or mode.
    func created(in directory: Inode, mode: mode_t, make: () -> (fd: Int32, contents: SpareContents?)) {
        let (generation, wanted, stale) = state.withLock { state -> (UInt64, Bool, Spare?) in
            let continues = state.lastDirectory === directory && state.lastMode == mode
            state.lastDirectory = directory
            state.lastMode = mode
            var stale: Spare?
            if let spare = state.spare, spare.directory !== directory || spare.mode != mode {
                stale = spare
                state.spare = nil
            }
            return (state.generation, continues && state.spare == nil, stale)
        }
        stale?.close()
        guard wanted else { return }
        let made = make()
        guard made.fd >= 0 else { return }
        let spare = Spare(directory: directory, mode: mode, fd: made.fd, contents: made.contents)
        let kept = state.withLock { state -> Bool in
            guard state.generation == generation, state.spare == nil,
                  state.lastDirectory === directory, state.lastMode == mode else { return false }
            state.spare = spare
            return true
        }
        if !kept { spare.close() }
    }

    /// Closes the spare and ends the run: what a file made in some directory gets may
    /// have changed, a class key is going, or the disk is full and the spare's inode is
    /// wanted. Whether there was a spare; errno is kept.
    @discardableResult
    func discard() -> Bool {
        let spare = state.withLock { state -> Spare? in
            state.generation &+= 1
            state.lastDirectory = nil
            defer { state.spare = nil }
            return state.spare
        }
        guard let spare else { return false }
        let saved = errno
        spare.close()
        errno = saved
        return true
    }
}
