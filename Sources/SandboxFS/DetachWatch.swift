// A mount taken from its mount point by another hand (umount -l, fusermount3 -u -z)
// while files in it are busy: the kernel keeps the filesystem alive for them and the
// daemon goes on serving it, but no dpfs command finds the mount any more, so none can
// lock it. Once the mount table no longer shows the mount and the session has not
// ended within a moment (an ordinary unmount ends it), the device restarts, as a phone
// powering off: every protected class goes, with what the kernel cached of it.
//
// A table that cannot be read (no descriptor to spare: an app holding thousands of
// files open) tells nothing: the watch reads it again every second until it can,
// whether or not it changes again meanwhile. Taking the failed read for an empty table
// would restart the device for nothing.
import Glibc

final class DetachWatch {
    private let thread: WakeableThread

    /// How long a mount gone from the table may take to end its session on its own.
    static let endingGrace: Int32 = 2000
    /// How soon a table that could not be read is read again, in milliseconds.
    static let retryInterval: Int32 = 1000

    /// `isShown` says whether the table shows the mount, nil when it cannot be read;
    /// `onUnreadable` hears the first of each spell of such reads. Nil when the mount
    /// table cannot be watched, or no thread started to watch it (nothing is then done
    /// on a detach).
    init?(isShown: @escaping @Sendable () -> Bool?, onUnreadable: @escaping @Sendable () -> Void,
          onDetached: @escaping @Sendable () -> Void) {
        let table = open("/proc/self/mountinfo", O_RDONLY | O_CLOEXEC)
        guard table >= 0 else { return nil }
        guard let thread = WakeableThread() else { close(table); return nil }
        self.thread = thread
        let started = thread.start { stop in
            defer { close(table) }
            // The kernel flags the table's descriptor (POLLPRI) at each change of it.
            var fds = [pollfd(fd: table, events: Int16(POLLPRI), revents: 0), pollfd(fd: stop, events: Int16(POLLIN), revents: 0)]
            var unread = false
            while true {
                fds[0].revents = 0
                fds[1].revents = 0
                let ready = poll(&fds, 2, unread ? Self.retryInterval : -1)
                if ready < 0 && errno == EINTR { continue }
                guard ready >= 0, fds[1].revents == 0 else { return }
                guard unread || fds[0].revents & Int16(POLLPRI) != 0 else { continue }
                guard let shown = isShown() else {
                    if !unread { onUnreadable() }
                    unread = true
                    continue
                }
                unread = false
                guard !shown else { continue }
                var ending = pollfd(fd: stop, events: Int16(POLLIN), revents: 0)
                if poll(&ending, 1, Self.endingGrace) != 0 { return }
                onDetached()
                return
            }
        }
        guard started else {
            thread.discard()
            close(table)
            return nil
        }
    }

    /// After the session: the thread ended.
    func finish() { thread.finish() }
}
