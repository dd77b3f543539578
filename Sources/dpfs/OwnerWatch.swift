// A daemon mounted for one command (restore's TemporaryMount) must not outlive it: a
// command killed outright (SIGKILL, the OOM killer) runs no clean-up, and its mount
// would stay, unlocked, with nothing left to lock it. A thread waits on the command's
// pidfd and, when it ends, sends the daemon SIGTERM: the stop a service manager asks
// for, which restarts the device (every class key wiped) before the unmount.
import CLinux
import DPFSProtocol
import Glibc
import Logging

enum OwnerWatch {
    static func start(owner: pid_t, logger: Logger) {
        let pidfd = dpfs_pidfd_open(owner)
        // No such process: it ended before the mount was ready.
        guard pidfd >= 0 || errno == ESRCH else {
            logger.warning("cannot watch process \(owner) (pidfd_open: \(String(cString: strerror(errno)))); the mount does not end with it")
            return
        }
        do throws(PosixThread.StartError) {
            try PosixThread.start(named: "dpfs-owner") {
                if pidfd >= 0 {
                    var entry = pollfd(fd: pidfd, events: Int16(POLLIN), revents: 0)
                    while poll(&entry, 1, -1) < 0 && errno == EINTR {}
                    close(pidfd)
                }
                logger.notice("process \(owner), which this mount was made for, has ended: the daemon stops")
                kill(getpid(), SIGTERM)
            }
        } catch {
            logger.warning("cannot watch process \(owner) (\(error)); the mount does not end with it")
            if pidfd >= 0 { close(pidfd) }
        }
    }
}
