#ifndef DPFS_RING_HELPERS_H
#define DPFS_RING_HELPERS_H

// Threads that run jobs an io_uring queue's thread hands them (ring_queues.c): a read or
// write may wait on the disk, and the queue's thread must not, or every other request
// from its CPU waits behind it. All started with the queues, by the ordinary thread
// that starts them (a queue's thread is idle-class, and a thread it started would be
// too), or as jobs come and none is idle if that fell short; none exits before the
// session ends, and each runs what was queued before it goes.

#include <pthread.h>

#define DPFS_HELPERS_MAX 16

struct dpfs_helper_job {
    struct dpfs_helper_job *next;
    void (*run)(struct dpfs_helper_job *job);
};

struct dpfs_helpers {
    pthread_mutex_t lock;
    pthread_cond_t work;
    struct dpfs_helper_job *head, *tail;
    unsigned int count, idle, max;
    unsigned int queued;    // jobs not yet taken
    int stopping;
    pthread_t threads[DPFS_HELPERS_MAX];
};

void dpfs_helpers_init(struct dpfs_helpers *helpers, unsigned int max);
/// Starts helpers up to the maximum.
void dpfs_helpers_start_all(struct dpfs_helpers *helpers);
/// Queues `job` to run on a helper; 0, or -1 when there is no helper to run it (none
/// could be started): the caller runs it itself.
int dpfs_helpers_submit(struct dpfs_helpers *helpers, struct dpfs_helper_job *job);
/// Runs what is queued, then ends the helpers and waits for them.
void dpfs_helpers_stop(struct dpfs_helpers *helpers);

#endif
