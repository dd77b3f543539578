// One file's copy in a salvage directory. A copy that could not be written whole (a
// full disk, a quota, an I/O error) is removed rather than left at the original's
// size with zeros where the writes failed, which would read as a good copy.
// All-zero blocks are not written: they stay holes, so a sparse file stays sparse.
import Glibc
import SystemCalls

/// Each copy ends in exactly one call of `finish` or `remove`.
struct SalvageCopy {
    let path: String
    private let fd: Int32

    init(path: String) throws(Errno) {
        fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard fd >= 0 else { throw Errno.current }
        self.path = path
    }

    /// Writes `bytes` at `offset`, unless they are all zeros (a new file reads zeros there).
    func write(_ bytes: UnsafeRawBufferPointer, at offset: Int) throws(Errno) {
        guard bytes.contains(where: { $0 != 0 }) else { return }
        try pwriteAll(fd, bytes, at: offset)
    }

    /// Sets the copy's size and makes it durable; a copy that fails here is removed.
    func finish(size: Int) throws(Errno) {
        var failure: Errno?
        if ftruncate(fd, off_t(size)) != 0 {
            failure = Errno.current
        } else if fsync(fd) != 0 {
            failure = Errno.current
        }
        if close(fd) != 0, failure == nil, errno != EINTR { failure = Errno.current }
        if let failure {
            unlink(path)
            throw failure
        }
    }

    /// Closes and removes a copy that could not be written whole.
    func remove() {
        close(fd)
        unlink(path)
    }
}
