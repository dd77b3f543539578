// One caller's streak. Each request the kernel queues on /dev/fuse wakes a worker
// asleep in read(2), and on a virtual machine whose idle CPUs halt, that wake-up is
// most of what a small request costs the caller waiting for it. A worker that polls
// the device after answering finds the next request without one, but only if no
// other worker sleeps in read(2): the kernel wakes a sleeper for every request it
// queues, whoever takes it. So polling pays only while the workers stand aside, and
// that is only right while a single thread is calling, one request at a time: a
// second caller's request would wait for the poller.
//
// The request header names the calling thread. When the last few requests were one
// thread's, each served while no other was, the worker that served the last becomes
// the poller and the others leave the device: a kick (a signal, unblocked only around
// their read) takes them out of read(2), and they wait on a condition variable. The
// streak ends, and they go back to the device, when a request comes from another
// thread (or from the kernel), when a second request is already queued as the
// poller takes one, when nothing comes for a poll's length, or when the poller has
// been on one request for a watch's length (a request that waits for another
// request to be served cannot hold the others up for longer). A kick that comes too
// late finds its worker already reading; that worker then takes a request while the
// streak holds, which ends the streak. docs/benchmarks.md has the measurements.

#include "caller_streak.h"

#include <errno.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <time.h>

/// Requests of one thread in a row, each served alone, that begin a streak.
#define DPFS_STREAK_LENGTH 4
/// How long the poller looks for the next request before the streak ends.
#define DPFS_STREAK_POLL_NANOSECONDS 60000L

static int dpfs_streak_signal(void) { return SIGRTMIN + 3; }

static void dpfs_streak_kicked(int number) { (void)number; }

int dpfs_streak_prepare(void) {
    struct sigaction action;
    memset(&action, 0, sizeof(action));
    action.sa_handler = dpfs_streak_kicked;
    sigemptyset(&action.sa_mask);
    // No SA_RESTART: the kick must end the read.
    action.sa_flags = 0;
    return sigaction(dpfs_streak_signal(), &action, NULL) == 0 ? 0 : -errno;
}

static void dpfs_streak_mask(int how) {
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, dpfs_streak_signal());
    pthread_sigmask(how, &set, NULL);
}

void dpfs_streak_block_kick(void) { dpfs_streak_mask(SIG_BLOCK); }

static long dpfs_streak_now(void) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return now.tv_sec * 1000000000L + now.tv_nsec;
}

// Called with loop->lock held.
static void dpfs_streak_begin(struct dpfs_loop *loop, struct dpfs_worker *poller) {
    __atomic_store_n(&loop->poller, poller, __ATOMIC_SEQ_CST);
    loop->begun = 1;
    loop->poller_busy = 1;
    for (unsigned int i = 0; i < loop->count; i++) {
        struct dpfs_worker *worker = &loop->workers[i];
        if (worker != poller && __atomic_load_n(&worker->reading, __ATOMIC_SEQ_CST)) {
            pthread_kill(worker->thread, dpfs_streak_signal());
        }
    }
}

// Called with loop->lock held. The parked workers stay parked; they come back one at
// a time as they are needed (dpfs_streak_needs_reader).
static void dpfs_streak_end(struct dpfs_loop *loop) {
    __atomic_store_n(&loop->poller, NULL, __ATOMIC_SEQ_CST);
    loop->run = 0;
    loop->poller_busy = 0;
}

// Called with loop->lock held.
static void dpfs_streak_unpark_one(struct dpfs_loop *loop) {
    loop->tokens++;
    pthread_cond_signal(&loop->unparked);
}

int dpfs_streak_needs_reader(struct dpfs_loop *loop) {
    if (loop->poller != NULL || loop->waiting > loop->parked) return 0;
    if (loop->parked == 0) return 1;
    if (loop->tokens < loop->parked) dpfs_streak_unpark_one(loop);
    return 0;
}

void dpfs_streak_watch(struct dpfs_loop *loop) {
    if (loop->poller != NULL && loop->poller_busy && loop->begun == loop->watched) {
        dpfs_streak_end(loop);
        if (loop->parked > 0) dpfs_streak_unpark_one(loop);
    }
    loop->watched = loop->begun;
}

void dpfs_streak_release(struct dpfs_loop *loop) {
    dpfs_streak_end(loop);
    pthread_cond_broadcast(&loop->unparked);
}

int dpfs_streak_park(struct dpfs_loop *loop, struct dpfs_worker *worker) {
    struct dpfs_worker *poller = __atomic_load_n(&loop->poller, __ATOMIC_SEQ_CST);
    if (poller == NULL || poller == worker) return 0;
    pthread_mutex_lock(&loop->lock);
    loop->parked++;
    while (!loop->exiting && !fuse_session_exited(loop->se)) {
        if (loop->poller == NULL && loop->tokens > 0) {
            loop->tokens--;
            break;
        }
        pthread_cond_wait(&loop->unparked, &loop->lock);
    }
    loop->parked--;
    pthread_mutex_unlock(&loop->lock);
    return 1;
}

static int dpfs_streak_ready(struct dpfs_loop *loop) {
    struct pollfd device = {.fd = fuse_session_fd(loop->se), .events = POLLIN, .revents = 0};
    return poll(&device, 1, 0) > 0;
}

int dpfs_streak_queued(struct dpfs_loop *loop, struct dpfs_worker *worker) {
    if (__atomic_load_n(&loop->poller, __ATOMIC_SEQ_CST) != worker) return 0;
    return dpfs_streak_ready(loop);
}

int dpfs_streak_poll(struct dpfs_loop *loop, struct dpfs_worker *worker) {
    long until = dpfs_streak_now() + DPFS_STREAK_POLL_NANOSECONDS;
    do {
        if (dpfs_streak_ready(loop)) return 1;
        // The caller may be waiting for this CPU to run on: it goes first.
        sched_yield();
        if (fuse_session_exited(loop->se)) return 0;
    } while (dpfs_streak_now() < until);
    pthread_mutex_lock(&loop->lock);
    if (loop->poller == worker) dpfs_streak_end(loop);
    pthread_mutex_unlock(&loop->lock);
    return 0;
}

int dpfs_streak_receive(struct dpfs_loop *loop, struct dpfs_worker *worker) {
    // Only a worker that may be asleep while a streak begins needs the kick; a loop of
    // one worker never has a streak.
    int kickable = loop->max > 1;
    __atomic_store_n(&worker->reading, 1, __ATOMIC_SEQ_CST);
    if (kickable) dpfs_streak_mask(SIG_UNBLOCK);
    // A streak begun since the worker looked (dpfs_streak_park) did not kick it if
    // it saw `reading` still clear; then this sees the poller.
    struct dpfs_worker *poller = __atomic_load_n(&loop->poller, __ATOMIC_SEQ_CST);
    if (poller != NULL && poller != worker) {
        if (kickable) dpfs_streak_mask(SIG_BLOCK);
        __atomic_store_n(&worker->reading, 0, __ATOMIC_SEQ_CST);
        return -EINTR;
    }
    pthread_setcancelstate(PTHREAD_CANCEL_ENABLE, NULL);
    int res = fuse_session_receive_buf(loop->se, &worker->buf);
    pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, NULL);
    if (kickable) dpfs_streak_mask(SIG_BLOCK);
    __atomic_store_n(&worker->reading, 0, __ATOMIC_SEQ_CST);
    return res;
}

void dpfs_streak_note(struct dpfs_loop *loop, struct dpfs_worker *worker, const void *header, int queued) {
    uint32_t pid = 0;
    if (header != NULL) memcpy(&pid, (const char *)header + DPFS_FUSE_IN_PID_OFFSET, sizeof(pid));
    if (loop->poller != NULL) {
        if (worker != loop->poller || pid != loop->last_pid || queued) {
            dpfs_streak_end(loop);
        } else {
            loop->begun++;
            loop->poller_busy = 1;
            return;
        }
    }
    // `waiting` no longer counts this worker: every other one waits.
    int alone = loop->waiting + 1 == loop->count;
    if (pid != 0 && alone && pid == loop->last_pid) {
        loop->run++;
    } else {
        loop->run = 1;
    }
    loop->last_pid = pid;
    if (loop->run >= DPFS_STREAK_LENGTH && loop->count > 1) dpfs_streak_begin(loop, worker);
}

void dpfs_streak_answered(struct dpfs_loop *loop, struct dpfs_worker *worker) {
    if (loop->poller == worker) loop->poller_busy = 0;
}
