// The files created in each directory since the app last synced it. A new file's header
// is written to an unnamed file that is then linked in, and ext4 commits the name at
// its next journal commit (any fsync on the filesystem) while delayed allocation keeps
// the header until writeback: a power cut in between leaves a named file without a
// header, which reads as damage. Syncing every new file before its link would order
// them but costs a journal commit per create; instead an app's fsync of a directory,
// which is what makes a name durable, syncs first the files created in it since its
// last sync, so no name it made durable outlives its header.
//
// A file is remembered by its backing name: one renamed away meanwhile is not found
// (and is not the directory's any more), one replaced is another file, synced to no
// harm. Past `limit` names in all, the lists go and the next fsync of any directory
// syncs the whole backing filesystem instead, which covers them all.
import CLinux
import Glibc
import Synchronization
import SystemCalls

final class NewFileSyncs: Sendable {
    private struct State {
        var pending: [InodeKey: [[CChar]]] = [:]
        var count = 0
        var overflowed = false
    }

    /// Enough for the creates of a build or an extract between two syncs, at a few
    /// hundred bytes each.
    static let limit = 4096

    private let state = Mutex(State())

    /// Notes that `stored` (NUL-terminated) was just linked in the directory `directory`.
    func created(_ stored: [CChar], in directory: InodeKey) {
        state.withLock { state in
            guard !state.overflowed else { return }
            state.pending[directory, default: []].append(stored)
            state.count += 1
            if state.count > Self.limit {
                state = State(pending: [:], count: 0, overflowed: true)
            }
        }
    }

    /// Syncs the data of the files created in the directory open as `directoryFD`
    /// (`directory`) since its last sync: before the directory itself is synced.
    func syncCreated(in directory: InodeKey, directoryFD: Int32) throws(Errno) {
        let (names, everything) = state.withLock { state -> ([[CChar]], Bool) in
            if state.overflowed {
                state = State()
                return ([], true)
            }
            guard let names = state.pending.removeValue(forKey: directory) else { return ([], false) }
            state.count -= names.count
            return (names, false)
        }
        if everything {
            try Errno.check(syncfs(directoryFD))
            return
        }
        for name in names {
            // Not blocking on a FIFO that took the name meanwhile.
            let fd = openat(directoryFD, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)
            guard fd >= 0 else { continue }
            defer { close(fd) }
            try Errno.check(fdatasync(fd))
        }
    }
}
