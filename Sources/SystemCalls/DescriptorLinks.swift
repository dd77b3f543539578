// Gives an open file (an O_TMPFILE one, or any node by its O_PATH descriptor) a name.
// linkat(fd, "", AT_EMPTY_PATH) is one call without a path walk, but needs
// CAP_DAC_READ_SEARCH (a daemon run as root has it); without it the kernel answers
// ENOENT, and the link goes through /proc/self/fd, as every unprivileged daemon must.
import Glibc
import Synchronization

/// Whether linkat with AT_EMPTY_PATH still looks usable (cleared at its first ENOENT).
private let emptyPathLinks = Atomic<Bool>(true)

/// Links `fd` as `name` in `parentFD`.
public func linkDescriptor(_ fd: Int32, into parentFD: Int32, as name: UnsafePointer<CChar>) throws(Errno) {
    if emptyPathLinks.load(ordering: .relaxed) {
        if linkat(fd, "", parentFD, name, AtFlag.emptyPath) == 0 { return }
        // ENOENT is also what a missing capability reads as: the path through /proc
        // tells them apart (and says what a missing target really is).
        guard errno == ENOENT else { throw Errno.current }
        try withProcPath(fd) { (path) throws(Errno) in try Errno.check(linkat(AT_FDCWD, path, parentFD, name, AT_SYMLINK_FOLLOW)) }
        emptyPathLinks.store(false, ordering: .relaxed)
        return
    }
    try withProcPath(fd) { (path) throws(Errno) in try Errno.check(linkat(AT_FDCWD, path, parentFD, name, AT_SYMLINK_FOLLOW)) }
}
