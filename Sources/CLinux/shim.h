#ifndef DPFS_CLINUX_SHIM_H
#define DPFS_CLINUX_SHIM_H
// Linux calls that Glibc's Swift module does not show. _GNU_SOURCE is not defined here
// (it would change struct layouts other modules see); the few GNU pieces are spelled out.
#include <sys/types.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/xattr.h>
#include <sys/prctl.h>
#include <sys/sysmacros.h>
#include <sys/stat.h>
#include <fcntl.h>
#include <unistd.h>
#include <malloc.h>
#include <sys/syscall.h>
#include <spawn.h>
#include <string.h>
#include <linux/stat.h>
#include <errno.h>
#include <pthread.h>

extern int renameat2(int olddirfd, const char *oldpath, int newdirfd, const char *newpath,
                     unsigned int flags);
extern int fallocate(int fd, int mode, off_t offset, off_t len);
extern int syncfs(int fd);
extern int sync_file_range(int fd, off_t offset, off_t nbytes, unsigned int flags);
extern int accept4(int fd, struct sockaddr *addr, socklen_t *len, int flags);
extern int posix_spawn_file_actions_addclosefrom_np(posix_spawn_file_actions_t *actions, int from);
extern int pipe2(int fds[2], int flags);
extern int pthread_setname_np(pthread_t thread, const char *name);

struct dpfs_ucred { pid_t pid; uid_t uid; gid_t gid; };

/// The uid of a Unix socket's peer, or -1.
static inline long long dpfs_peer_uid(int fd) {
    struct dpfs_ucred cred;
    socklen_t len = sizeof(cred);
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0) return -1;
    return (long long)cred.uid;
}

/// The pid and uid of a Unix socket's peer (as of its connect or listen); 0 or -1.
static inline int dpfs_peer_credentials(int fd, pid_t *pid, uid_t *uid) {
    struct dpfs_ucred cred;
    socklen_t len = sizeof(cred);
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0) return -1;
    *pid = cred.pid;
    *uid = cred.uid;
    return 0;
}

/// The id of the mount that `path` shows, from statx without a request to its
/// filesystem (AT_STATX_DONT_SYNC: a FUSE mount's daemon may not serve yet, or no
/// more). 1 with the id no later mount is ever given (STATX_MNT_ID_UNIQUE, Linux 6.8),
/// 0 with the reusable one, -1 on error (errno).
static inline int dpfs_mount_id(const char *path, unsigned long long *id) {
    const unsigned int unique = 0x4000u;   // STATX_MNT_ID_UNIQUE, newer than these headers
    struct statx buffer;
    memset(&buffer, 0, sizeof(buffer));
    if (syscall(SYS_statx, AT_FDCWD, path, 0x4000 /* AT_STATX_DONT_SYNC */ | AT_SYMLINK_NOFOLLOW,
                unique | STATX_MNT_ID, &buffer) != 0) return -1;
    *id = buffer.stx_mnt_id;
    return (buffer.stx_mask & unique) ? 1 : 0;
}

/// fstatat(dirfd, name, st, flags | AT_SYMLINK_NOFOLLOW) through statx, with the node's
/// birth time when its filesystem keeps one (1; 0 without it), else -1 (errno): a birth
/// time names one life of an inode number, which a freed number's next inode does not share.
/// Where statx is refused (a seccomp filter older than it), fstatat itself, no birth time.
static inline int dpfs_stat_birth(int dirfd, const char *name, int flags, struct stat *st,
                                  long long *birth_seconds, unsigned int *birth_nanoseconds) {
    struct statx x;
    flags |= AT_SYMLINK_NOFOLLOW | 0x800 /* AT_NO_AUTOMOUNT, as the stat family implies */;
    if (syscall(SYS_statx, dirfd, name, flags, STATX_BASIC_STATS | STATX_BTIME, &x) != 0) {
        if (errno != ENOSYS && errno != EPERM) return -1;
        return fstatat(dirfd, name, st, flags) == 0 ? 0 : -1;
    }
    memset(st, 0, sizeof(*st));
    st->st_dev = makedev(x.stx_dev_major, x.stx_dev_minor);
    st->st_ino = x.stx_ino;
    st->st_mode = x.stx_mode;
    st->st_nlink = x.stx_nlink;
    st->st_uid = x.stx_uid;
    st->st_gid = x.stx_gid;
    st->st_rdev = makedev(x.stx_rdev_major, x.stx_rdev_minor);
    st->st_size = (off_t)x.stx_size;
    st->st_blksize = (blksize_t)x.stx_blksize;
    st->st_blocks = (blkcnt_t)x.stx_blocks;
    st->st_atim.tv_sec = x.stx_atime.tv_sec;
    st->st_atim.tv_nsec = x.stx_atime.tv_nsec;
    st->st_mtim.tv_sec = x.stx_mtime.tv_sec;
    st->st_mtim.tv_nsec = x.stx_mtime.tv_nsec;
    st->st_ctim.tv_sec = x.stx_ctime.tv_sec;
    st->st_ctim.tv_nsec = x.stx_ctime.tv_nsec;
    if (!(x.stx_mask & STATX_BTIME)) return 0;
    *birth_seconds = x.stx_btime.tv_sec;
    *birth_nanoseconds = x.stx_btime.tv_nsec;
    return 1;
}

/// The major and minor numbers of a device, as /proc/self/mountinfo prints them.
/// Names the calling thread (as /proc/PID/task/TID/comm shows it; 15 bytes at most).
static inline void dpfs_name_thread(const char *name) { (void)pthread_setname_np(pthread_self(), name); }

/// The calling thread's name into `name` (16 bytes with its NUL); 0 on success.
static inline int dpfs_thread_name(char *name) { return prctl(PR_GET_NAME, name, 0, 0, 0); }

/// A descriptor that becomes readable when process `pid` ends (pidfd_open(2), Linux
/// 5.3); -1 with errno ESRCH when there is no such process any more.
static inline int dpfs_pidfd_open(pid_t pid) { return (int)syscall(SYS_pidfd_open, pid, 0); }

/// Sends `sig` to the process `pidfd` names (pidfd_send_signal(2), Linux 5.1): never to
/// another process that was given its pid after it ended and was reaped.
static inline int dpfs_pidfd_send_signal(int pidfd, int sig) {
    return (int)syscall(SYS_pidfd_send_signal, pidfd, sig, NULL, 0);
}

/// The calling thread's id (the name of its /proc/self/task entry).
static inline pid_t dpfs_thread_id(void) { return (pid_t)syscall(SYS_gettid); }

static inline unsigned int dpfs_major(dev_t dev) { return major(dev); }
static inline unsigned int dpfs_minor(dev_t dev) { return minor(dev); }

static inline int dpfs_accept_cloexec(int fd) {
    return accept4(fd, NULL, NULL, SOCK_CLOEXEC);
}

/// Has glibc overwrite every freed heap block, so plaintext that passed through a
/// freed buffer (libfuse's read replies) does not linger after a lock.
static inline int dpfs_scrub_freed_memory(void) {
    return mallopt(M_PERTURB, 0xa5);
}

/// Has every thread allocate from a few shared malloc arenas instead of one each:
/// each libfuse worker frees a 1 MiB reply buffer per read, and a per-thread arena
/// keeps what its thread freed (after a sequential read of 1 GiB the daemon kept 66 MiB
/// with an arena per thread, 57 MiB with two).
static inline int dpfs_share_malloc_arenas(int arenas) {
    return mallopt(M_ARENA_MAX, arenas);
}

/// Keeps large blocks (the 1 MiB buffers of read replies) in the heap, and the heap's
/// free top, instead of mapping each block and trimming the heap after every free:
/// each fresh page costs a fault, and M_PERTURB fills every block it hands out, so a
/// sequential read faulted in up to 180 pages per MiB. The session loop gives the free
/// memory back when the daemon falls idle (malloc_trim, FuseLoop/session_loop.c).
static inline int dpfs_keep_heap_until_idle(void) {
    return mallopt(M_MMAP_THRESHOLD, 32 << 20) && mallopt(M_TRIM_THRESHOLD, 64 << 20);
}

#ifndef __O_TMPFILE
#define __O_TMPFILE 020000000
#endif
/// An unnamed regular file in directory `dirfd` (O_TMPFILE): a new file gets its
/// header before it has a name, so no reader ever meets a file without one.
static inline int dpfs_open_tmpfile(int dirfd, const char *directory, mode_t mode) {
    return openat(dirfd, directory, __O_TMPFILE | O_DIRECTORY | O_RDWR | O_CLOEXEC, mode);
}

/// One record of getdents64 (linux/dirent.h); the name follows, NUL-terminated.
struct dpfs_dirent64 {
    unsigned long long d_ino;
    long long d_off;
    unsigned short d_reclen;
    unsigned char d_type;
    char d_name[];
};

/// getdents64(2): the entries of the directory open as `fd` from its current offset,
/// without glibc's DIR stream and its 32 KiB buffer per open.
static inline long dpfs_getdents(int fd, void *buffer, size_t size) {
    return syscall(SYS_getdents64, fd, buffer, size);
}

static inline const char *dpfs_dirent_name(const struct dpfs_dirent64 *entry) { return entry->d_name; }

static inline int dpfs_set_not_dumpable(void) {
    return prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
}

/// Makes the caller the process its orphaned descendants are reparented to.
static inline int dpfs_become_subreaper(void) {
    return prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
}

/// A kernel file handle (struct file_handle with room for the largest, MAX_HANDLE_SZ):
/// names an inode, generation included, without holding it open.
#define DPFS_HANDLE_MAX 128
struct dpfs_file_handle { unsigned int handle_bytes; int handle_type; unsigned char f_handle[DPFS_HANDLE_MAX]; };
extern int name_to_handle_at(int dirfd, const char *name, void *handle, int *mount_id, int flags);
extern int open_by_handle_at(int mount_fd, void *handle, int flags);

/// The file handle of the node `fd` (any descriptor, O_PATH too); 0 or -1 (errno:
/// EOPNOTSUPP when its filesystem has none).
static inline int dpfs_name_to_handle(int fd, struct dpfs_file_handle *handle) {
    int mount_id;
    handle->handle_bytes = DPFS_HANDLE_MAX;
    return name_to_handle_at(fd, "", handle, &mount_id, 0x1000 /* AT_EMPTY_PATH */);
}

/// The file handle of `name` in the directory `dirfd`, a final symlink not followed.
static inline int dpfs_name_to_handle_at(int dirfd, const char *name, struct dpfs_file_handle *handle) {
    int mount_id;
    handle->handle_bytes = DPFS_HANDLE_MAX;
    return name_to_handle_at(dirfd, name, handle, &mount_id, 0);
}

/// Opens the node `handle` names, on the filesystem of `mount_fd` (needs
/// CAP_DAC_READ_SEARCH); ESTALE when that inode is gone.
static inline int dpfs_open_by_handle(int mount_fd, struct dpfs_file_handle *handle, int flags) {
    return open_by_handle_at(mount_fd, handle, flags);
}

// --- The control socket's workers (Control/ControlWorkers): one epoll set, each
// connection armed once at a time (EPOLLONESHOT), its key in the event's data.
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/timerfd.h>

/// Adds `fd` to the epoll set (EPOLL_CTL_ADD) or arms it again (EPOLL_CTL_MOD) for one
/// wake-up: when it can be read, or its peer has hung up.
static inline int dpfs_epoll_arm(int epfd, int op, int fd, unsigned long long key) {
    struct epoll_event event = { .events = EPOLLIN | EPOLLRDHUP | EPOLLONESHOT, .data.u64 = key };
    return epoll_ctl(epfd, op, fd, &event);
}

static inline int dpfs_epoll_remove(int epfd, int fd) { return epoll_ctl(epfd, EPOLL_CTL_DEL, fd, NULL); }

/// Waits up to `timeout_ms` (-1: no limit) for one armed descriptor; 1 and its key, 0
/// when none came in time, -1 on an error (EINTR).
static inline int dpfs_epoll_next(int epfd, int timeout_ms, unsigned long long *key) {
    struct epoll_event event;
    int n = epoll_wait(epfd, &event, 1, timeout_ms);
    if (n == 1) *key = event.data.u64;
    return n;
}

/// The bytes waiting to be read on a socket, or -1.
static inline int dpfs_queued_bytes(int fd) {
    int queued = 0;
    return ioctl(fd, FIONREAD, &queued) == 0 ? queued : -1;
}

/// A one-shot timer on the monotonic clock that can wait in an epoll set.
static inline int dpfs_timer_create(void) { return timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK); }

/// Sets the timer to expire once, `seconds` from now.
static inline int dpfs_timer_set(int fd, long long seconds, long nanoseconds) {
    struct itimerspec spec = { .it_value = { .tv_sec = seconds, .tv_nsec = nanoseconds } };
    return timerfd_settime(fd, 0, &spec, NULL);
}

// --- The device's deadlines (DataProtection/LockState): the grace period, the
// user-inactive period and the inactivity reboot run on the boot clock, which counts
// time the machine spent suspended and which no one can set back.

/// Seconds on the boot clock (CLOCK_BOOTTIME).
static inline double dpfs_boot_clock(void) {
    struct timespec now = { 0, 0 };
    clock_gettime(CLOCK_BOOTTIME, &now);
    return (double)now.tv_sec + (double)now.tv_nsec / 1e9;
}

/// A timer on the boot clock whose read blocks until it expires.
static inline int dpfs_boot_timer_create(void) { return timerfd_create(CLOCK_BOOTTIME, TFD_CLOEXEC); }

/// Sets the timer to expire once, at `seconds` on the boot clock (at once if that has
/// passed); a negative `seconds` disarms it.
static inline int dpfs_boot_timer_set(int fd, double seconds) {
    struct itimerspec spec = { { 0, 0 }, { 0, 0 } };
    if (seconds >= 0) {
        long long whole = (long long)seconds;
        spec.it_value.tv_sec = whole;
        spec.it_value.tv_nsec = (long)((seconds - (double)whole) * 1e9);
        // An it_value of zero would disarm it.
        if (spec.it_value.tv_sec == 0 && spec.it_value.tv_nsec == 0) spec.it_value.tv_nsec = 1;
    }
    return timerfd_settime(fd, TFD_TIMER_ABSTIME, &spec, NULL);
}

#endif
