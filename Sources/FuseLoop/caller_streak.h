#ifndef DPFS_CALLER_STREAK_H
#define DPFS_CALLER_STREAK_H

// While one thread alone calls into the file system, one worker serves it from a
// polling loop and the others wait off the device (caller_streak.c says why).

#include "session_loop.h"

/// Installs the kick's handler. 0 or a negative errno.
int dpfs_streak_prepare(void);

/// Blocks the kick in the calling worker (it only interrupts the read).
void dpfs_streak_block_kick(void);

/// Whether `worker` must wait off the device now; if so, it waits there until the
/// streak has ended and it is needed. Returns whether it waited.
int dpfs_streak_park(struct dpfs_loop *loop, struct dpfs_worker *worker);

/// For the poller: polls the device for the next request; 1 when one is there, 0 when
/// none came (the streak is over).
int dpfs_streak_poll(struct dpfs_loop *loop, struct dpfs_worker *worker);

/// Reads the next request as the other workers do, open to a kick. As
/// fuse_session_receive_buf.
int dpfs_streak_receive(struct dpfs_loop *loop, struct dpfs_worker *worker);

/// Notes the request `worker` just took (its in-header at `header`, NULL when spliced):
/// a streak may begin or end. Called with loop->lock held; `queued` says whether
/// another request was already waiting, for the poller (dpfs_streak_queued).
void dpfs_streak_note(struct dpfs_loop *loop, struct dpfs_worker *worker, const void *header, int queued);

/// Whether another request waits at the device; only asked by the poller.
int dpfs_streak_queued(struct dpfs_loop *loop, struct dpfs_worker *worker);

/// After a worker took a request: whether the loop must start another worker, as no
/// other is left at the device. A parked one goes back instead, if any. Called with
/// loop->lock held.
int dpfs_streak_needs_reader(struct dpfs_loop *loop);

/// For the trimmer's tick: ends a streak whose poller has served one request since
/// the tick before, so that the others come back. Called with loop->lock held.
void dpfs_streak_watch(struct dpfs_loop *loop);

/// Notes that `worker` answered its request. Called with loop->lock held.
void dpfs_streak_answered(struct dpfs_loop *loop, struct dpfs_worker *worker);

/// Ends a streak and lets every parked worker go, for the loop's end. Called with
/// loop->lock held.
void dpfs_streak_release(struct dpfs_loop *loop);

#endif
