#ifndef DPFS_SESSION_LOOP_H
#define DPFS_SESSION_LOOP_H

// The session loop's state, shared by session_loop.c and caller_streak.c.

#include <pthread.h>
#include <semaphore.h>
#include <stdint.h>
#include "fuse_loop.h"

#define DPFS_LOOP_MAX_WORKERS 64

struct dpfs_loop;

struct dpfs_worker {
    struct dpfs_loop *loop;
    pthread_t thread;
    struct fuse_buf buf;
    size_t touched;         // bytes of the buffer requests have touched
    unsigned long trims;    // the loop's trims when this worker last looked
    int reading;            // atomic: inside the read a kick interrupts (caller_streak.c)
};

struct dpfs_loop {
    struct fuse_session *se;
    pthread_mutex_t lock;
    sem_t finished;
    unsigned int waiting;   // workers waiting for a request (parked ones too)
    unsigned int count;     // workers started
    unsigned int max;
    int error;
    int exiting;
    unsigned long served;   // requests served so far
    unsigned long trims;    // times memory was given back
    pthread_cond_t tick;    // wakes the trimmer early, at the end
    pthread_t trimmer;
    dpfs_idle_callback idle;
    void *idle_context;
    struct dpfs_rings *rings;   // FUSE over io_uring, when the kernel takes it (ring_queues.c)
    int rings_tried;

    // One caller's streak (caller_streak.c); all under `lock`, `poller` also read
    // atomically outside it.
    struct dpfs_worker *poller; // the one worker at the device during a streak, or NULL
    uint32_t last_pid;          // the caller of the last request served alone
    unsigned int run;           // its requests in a row, each served alone
    unsigned long begun;        // requests the poller has begun in this streak
    unsigned long watched;      // `begun` at the trimmer's last tick
    int poller_busy;            // the poller serves a request now
    unsigned int parked;        // workers waiting off the device (counted in `waiting`)
    unsigned int tokens;        // parked workers called back and not yet gone
    pthread_cond_t unparked;

    struct dpfs_worker workers[DPFS_LOOP_MAX_WORKERS];
};

#endif
