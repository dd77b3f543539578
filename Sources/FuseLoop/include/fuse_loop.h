#ifndef DPFS_FUSE_LOOP_H
#define DPFS_FUSE_LOOP_H

// How dpfs serves a FUSE session: its own multithreaded loop over /dev/fuse
// (session_loop.c) and, when the kernel offers it, FUSE over io_uring (ring_queues.c);
// and the two helpers for a write request's bytes. What Swift calls; the rest is
// private to the target.

// libfuse picks its ABI from FUSE_USE_VERSION; it must be set before the include.
// Debian 12 ships 3.14.
#ifndef FUSE_USE_VERSION
#define FUSE_USE_VERSION 312
#endif
#include <fuse3/fuse_lowlevel.h>
#include <stddef.h>
#include <sys/types.h>
#include <sys/uio.h>
#include "fuse_abi.h"

typedef void (*dpfs_idle_callback)(void *context);
typedef void (*dpfs_ring_observer)(const void *request, size_t length);

/// A session's io_uring queues (opaque).
struct dpfs_rings;

/// Serves `se` on up to `max_workers` threads until it is unmounted or exited (a
/// signal), calling `idle(idle_context)` (which may be NULL) when it falls idle;
/// with `rings` (may be NULL), also through io_uring queues once INIT negotiated them.
/// 0, or a negative errno.
int dpfs_session_loop_mt(struct fuse_session *se, unsigned int max_workers,
                         dpfs_idle_callback idle, void *idle_context, struct dpfs_rings *rings);

/// Ends the loop serving `se` from any thread (as a signal would have): its workers
/// stop and dpfs_session_loop_mt returns.
void dpfs_loop_stop(struct fuse_session *se);

/// In place of libfuse's signal handlers: SIGTERM, SIGINT and SIGHUP write their number
/// as one byte to `notify_fd` (a pipe) and do nothing else, so that whoever reads it
/// acts before the loop ends (dpfs_loop_stop); SIGPIPE and SIGXFSZ are ignored. 0 or a negative errno.
int dpfs_loop_catch_signals(int notify_fd);

/// Puts the default actions of those signals back.
void dpfs_loop_release_signals(void);

/// Counts a request served outside the session (the control socket's), so that the
/// loop gives memory back once the daemon is idle after it too.
void dpfs_loop_note_outside_request(void);

/// Unmaps the resident pages of the program's read-only file mappings that hold no
/// private page (session_loop.c says why).
void dpfs_release_code_pages(void);

/// Queues for `se`, started by the loop once an INIT reply takes FUSE_OVER_IO_URING;
/// `observe` sees each request before libfuse does. NULL when out of memory.
struct dpfs_rings *dpfs_rings_new(struct fuse_session *se, dpfs_ring_observer observe);

/// Whether the queues serve requests now (INIT took FUSE_OVER_IO_URING and they started).
int dpfs_rings_started(struct dpfs_rings *rings);

/// Frees rings made by dpfs_rings_new (stopped, if they were started).
void dpfs_rings_free(struct dpfs_rings *rings);

/// Noted while the INIT reply is written: the kernel will take requests through queues
/// whose payload buffers hold `payload_size` bytes.
void dpfs_rings_note_negotiated(struct dpfs_rings *rings, size_t payload_size);

/// The reply to the request the calling thread serves for a queue, taken into that
/// queue's entry; the reply's length, or -1 when `iov` is not such a reply.
ssize_t dpfs_ring_take_reply(struct dpfs_rings *rings, const struct iovec *iov, int count);

/// Where the calling thread may put the data of its reply to the read it serves for a
/// queue, or NULL.
void *dpfs_ring_read_space(struct dpfs_rings *rings, size_t size);

/// Whether the request the calling thread serves may wait on the kernel (have it write
/// back and drop pages): 1 on /dev/fuse and with a queue's helper; 0 on a queue's own
/// thread, which must go on serving the requests that wait needs.
int dpfs_ring_may_wait_on_kernel(struct dpfs_rings *rings);

/// The bytes of a write request when they sit in one memory buffer (no splice),
/// or NULL.
void *dpfs_bufvec_memory(struct fuse_bufvec *bufv);

/// Copies a request's bytes (from memory or a pipe) into `dst`.
ssize_t dpfs_bufvec_copy(struct fuse_bufvec *bufv, void *dst, size_t size);

/// Whether libfuse takes `options` (as after -o) for a session: 0, or -1 with what
/// libfuse logged about them in `why` (`size` bytes, NUL-terminated). Not while
/// another thread may log through libfuse: its log is taken for the call.
int dpfs_fuse_check_options(const char *options, char *why, size_t size);

#endif
