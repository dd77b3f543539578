// dpfs's multithreaded session loop, in place of fuse_session_loop_mt: the same shape
// (a worker starts another when none is left waiting, up to a maximum; none exits
// before the session ends; each is cancelled only while it waits for a request), with
// two differences for the daemon's memory:
//
// - Each worker's request buffer is a mapping of its own. libfuse malloc's 1 MiB per
//   worker, and the daemon has glibc fill every malloc'd block (M_PERTURB, to scrub
//   freed plaintext), so each buffer was resident in full from the start. A mapping
//   costs the pages requests touch. A large request (a write's data: requests are read,
//   not spliced, see KernelChannel.swift) touches most of it, and the kernel hands
//   requests to the waiting workers in turn, so after a sequential write every
//   worker's buffer would stay resident in full.
// - The read-only pages of the program and its libraries (code, constants) are unmapped
//   each time the session falls idle (they stay in the page cache; those a request
//   needs come back with a minor fault), with read-around off for them. Starting the
//   Swift runtime and Foundation touches far more of them than serving requests does
//   (with the kernel's fault-around, 64 KiB per touch): 27 of the idle daemon's 30 MiB.
// - When the session has been idle for a moment after serving requests (its own, or
//   the control socket's: dpfs_loop_note_outside_request), `idle` runs
//   (the filesystem gives back its idle I/O buffers), glibc returns the free parts of
//   its heaps (malloc_trim: a burst of 1 MiB reads leaves megabytes behind), and each
//   worker gives back all but 64 KiB of its buffer after its next request (it cannot
//   be done while the worker waits: the kernel may be writing a request into it).

#include "fuse_loop.h"

#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>
#include "loop_threads.h"
#include "ring_queues.h"
#include "tmpfile_request.h"

#define DPFS_LOOP_MAX_WORKERS 64
/// What stays resident of a worker's buffer after a larger request.
#define DPFS_LOOP_KEEP_BYTES ((size_t)64 * 1024)
/// How long the session must be idle before memory is given back.
#define DPFS_LOOP_IDLE_NANOSECONDS 250000000L

struct dpfs_loop;

/// The loop running now (one session per process), for dpfs_loop_stop.
static struct dpfs_loop *_Atomic dpfs_running_loop;

/// Where the signal handler writes the number of a stopping signal.
static volatile sig_atomic_t dpfs_signal_fd = -1;

/// Requests answered outside the session (the control socket's): they touch code and
/// heap too, and count as activity the trimmer gives memory back after.
static unsigned long dpfs_outside_served;

void dpfs_loop_note_outside_request(void) {
    __atomic_add_fetch(&dpfs_outside_served, 1, __ATOMIC_RELAXED);
}

struct dpfs_worker {
    struct dpfs_loop *loop;
    pthread_t thread;
    struct fuse_buf buf;
    size_t touched;         // bytes of the buffer requests have touched
    unsigned long trims;    // the loop's trims when this worker last looked
};

struct dpfs_loop {
    struct fuse_session *se;
    pthread_mutex_t lock;
    sem_t finished;
    unsigned int waiting;   // workers waiting for a request
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
    struct dpfs_worker workers[DPFS_LOOP_MAX_WORKERS];
};

// The largest request libfuse reads into a buffer: FUSE_MAX_MAX_PAGES (256) pages and
// a page of headers before the INIT exchange, max_write and the headers after it
// (dpfs asks for 1 MiB, which libfuse caps at that first size anyway).
static size_t dpfs_request_buffer_size(void) {
    return (size_t)257 * (size_t)sysconf(_SC_PAGESIZE);
}

static int dpfs_loop_start_worker(struct dpfs_loop *loop);

static void *dpfs_loop_worker(void *argument) {
    struct dpfs_worker *worker = (struct dpfs_worker *)argument;
    struct dpfs_loop *loop = worker->loop;
    struct fuse_buf *buf = &worker->buf;
    while (!fuse_session_exited(loop->se)) {
        pthread_setcancelstate(PTHREAD_CANCEL_ENABLE, NULL);
        int res = fuse_session_receive_buf(loop->se, buf);
        pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, NULL);
        if (res == -EINTR) continue;
        if (res <= 0) {
            if (res < 0) {
                fuse_session_exit(loop->se);
                loop->error = res;
            }
            break;
        }
        pthread_mutex_lock(&loop->lock);
        if (loop->exiting) {
            pthread_mutex_unlock(&loop->lock);
            return NULL;
        }
        loop->waiting--;
        if (loop->waiting == 0 && loop->count < loop->max) dpfs_loop_start_worker(loop);
        pthread_mutex_unlock(&loop->lock);
        size_t received = buf->size;
        if (!(buf->flags & FUSE_BUF_IS_FD)) dpfs_tmpfile_as_create(buf->mem, received);
        fuse_session_process_buf(loop->se, buf);
        // The INIT reply just written took FUSE_OVER_IO_URING: start the queues.
        if (loop->rings != NULL && __atomic_load_n(&loop->rings->negotiated, __ATOMIC_ACQUIRE) &&
            !__atomic_exchange_n(&loop->rings_tried, 1, __ATOMIC_ACQ_REL)) {
            dpfs_rings_start(loop->rings);
        }
        if (!(buf->flags & FUSE_BUF_IS_FD) && received > worker->touched) worker->touched = received;
        pthread_mutex_lock(&loop->lock);
        loop->waiting++;
        loop->served++;
        unsigned long trims = loop->trims;
        pthread_mutex_unlock(&loop->lock);
        // After the session was idle, the first request gives back what large requests
        // (a write's data) touched beyond the first 64 KiB. Not after every large request:
        // faulting the pages in again costs more than sealing them.
        if (trims != worker->trims && worker->touched > DPFS_LOOP_KEEP_BYTES) {
            size_t page = (size_t)sysconf(_SC_PAGESIZE);
            size_t keep = (DPFS_LOOP_KEEP_BYTES + page - 1) / page * page;
            size_t end = (worker->touched + page - 1) / page * page;
            if (end > keep) madvise((char *)buf->mem + keep, end - keep, MADV_DONTNEED);
            worker->touched = keep;
        }
        worker->trims = trims;
    }
    sem_post(&loop->finished);
    return NULL;
}

// Called with loop->lock held.
static int dpfs_loop_start_worker(struct dpfs_loop *loop) {
    unsigned int index = loop->count;
    size_t size = dpfs_request_buffer_size();
    void *memory = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (memory == MAP_FAILED) return -1;
    struct dpfs_worker *worker = &loop->workers[index];
    memset(worker, 0, sizeof(*worker));
    worker->loop = loop;
    worker->buf.mem = memory;
    worker->buf.size = size;
    loop->count++;
    loop->waiting++;
    int rc = dpfs_loop_create_thread(&worker->thread, dpfs_loop_worker, worker);
    if (rc != 0) {
        loop->count--;
        loop->waiting--;
        munmap(memory, size);
        return -1;
    }
    return 0;
}

// Every quarter second: if requests were served before the last tick and none since,
// gives memory back once.
static void *dpfs_loop_trimmer(void *argument) {
    struct dpfs_loop *loop = (struct dpfs_loop *)argument;
    unsigned long seen = 0, trimmed = 0;
    pthread_mutex_lock(&loop->lock);
    while (!loop->exiting) {
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_nsec += DPFS_LOOP_IDLE_NANOSECONDS;
        if (until.tv_nsec >= 1000000000L) { until.tv_sec += 1; until.tv_nsec -= 1000000000L; }
        pthread_cond_timedwait(&loop->tick, &loop->lock, &until);
        if (loop->exiting) break;
        unsigned long served = loop->served + __atomic_load_n(&dpfs_outside_served, __ATOMIC_RELAXED);
        int busy = loop->waiting < loop->count;
        if (loop->rings != NULL) {
            served += __atomic_load_n(&loop->rings->served, __ATOMIC_RELAXED);
            busy = busy || __atomic_load_n(&loop->rings->busy, __ATOMIC_RELAXED) > 0;
        }
        if (served == seen && served != trimmed && !busy) {
            trimmed = served;
            loop->trims++;
            if (loop->rings != NULL) __atomic_store_n(&loop->rings->trims, loop->trims, __ATOMIC_RELAXED);
            pthread_mutex_unlock(&loop->lock);
            if (loop->idle != NULL) loop->idle(loop->idle_context);
            malloc_trim(0);
            dpfs_release_code_pages();
            pthread_mutex_lock(&loop->lock);
        }
        seen = served;
    }
    pthread_mutex_unlock(&loop->lock);
    return NULL;
}

/// Unmaps the resident pages of the read-only file mappings (code and constants of the
/// program and its libraries) that hold no private page, and turns read-around off for
/// them, so only the pages in use come back. A mapping with private pages (relocated
/// data made read-only after relocation, RELRO; a text relocation) is left alone: its
/// private pages would be lost. Read-only, it cannot gain one after the check.
void dpfs_release_code_pages(void) {
    FILE *smaps = fopen("/proc/self/smaps", "re");
    if (smaps == NULL) return;
    // stdio would read /proc's 1 KiB blocks one system call each (some 170 a pass);
    // the buffer is a mapping so that it leaves nothing in the heap it just trimmed.
    size_t buffered = (size_t)64 * 1024;
    void *buffer = mmap(NULL, buffered, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (buffer != MAP_FAILED) setvbuf(smaps, (char *)buffer, _IOFBF, buffered);
    char *line = NULL;
    size_t capacity = 0;
    unsigned long start = 0, end = 0;
    int candidate = 0;
    while (getline(&line, &capacity, smaps) > 0) {
        unsigned long from, to, anonymous;
        char permissions[5];
        int path = 0;
        if (sscanf(line, "%lx-%lx %4s %*s %*s %*s %n", &from, &to, permissions, &path) >= 3 && path > 0) {
            start = from;
            end = to;
            candidate = line[path] == '/' && permissions[1] != 'w' && permissions[3] == 'p';
        } else if (candidate && sscanf(line, "Anonymous: %lu kB", &anonymous) == 1) {
            if (anonymous == 0) {
                madvise((void *)start, end - start, MADV_RANDOM);
                madvise((void *)start, end - start, MADV_DONTNEED);
            }
            candidate = 0;
        }
    }
    free(line);
    fclose(smaps);
    if (buffer != MAP_FAILED) munmap(buffer, buffered);
}

int dpfs_session_loop_mt(struct fuse_session *se, unsigned int max_workers,
                         dpfs_idle_callback idle, void *idle_context, struct dpfs_rings *rings) {
    struct dpfs_loop *loop = (struct dpfs_loop *)calloc(1, sizeof(struct dpfs_loop));
    if (loop == NULL) return -ENOMEM;
    loop->se = se;
    loop->max = max_workers < 1 ? 1 : max_workers > DPFS_LOOP_MAX_WORKERS ? DPFS_LOOP_MAX_WORKERS : max_workers;
    loop->idle = idle;
    loop->idle_context = idle_context;
    loop->rings = rings;
    pthread_mutex_init(&loop->lock, NULL);
    pthread_cond_init(&loop->tick, NULL);
    sem_init(&loop->finished, 0, 0);
    pthread_mutex_lock(&loop->lock);
    int err = dpfs_loop_start_worker(loop);
    pthread_mutex_unlock(&loop->lock);
    int trimming = 0;
    if (err == 0) {
        trimming = dpfs_loop_create_thread(&loop->trimmer, dpfs_loop_trimmer, loop) == 0;
    }
    if (err == 0) {
        atomic_store(&dpfs_running_loop, loop);
        // sem_wait returns early on a signal, and when dpfs_loop_stop posts.
        while (!fuse_session_exited(se)) sem_wait(&loop->finished);
        atomic_store(&dpfs_running_loop, NULL);
        pthread_mutex_lock(&loop->lock);
        for (unsigned int i = 0; i < loop->count; i++) pthread_cancel(loop->workers[i].thread);
        loop->exiting = 1;
        pthread_cond_signal(&loop->tick);
        unsigned int count = loop->count;
        pthread_mutex_unlock(&loop->lock);
        if (trimming) pthread_join(loop->trimmer, NULL);
        for (unsigned int i = 0; i < count; i++) {
            pthread_join(loop->workers[i].thread, NULL);
            munmap(loop->workers[i].buf.mem, dpfs_request_buffer_size());
        }
        dpfs_rings_stop(rings);
        err = loop->error;
    } else {
        err = -ENOMEM;
    }
    pthread_cond_destroy(&loop->tick);
    pthread_mutex_destroy(&loop->lock);
    sem_destroy(&loop->finished);
    free(loop);
    fuse_session_reset(se);
    return err;
}

void dpfs_loop_stop(struct fuse_session *se) {
    fuse_session_exit(se);
    struct dpfs_loop *loop = atomic_load(&dpfs_running_loop);
    if (loop != NULL) sem_post(&loop->finished);
}

static void dpfs_note_signal(int number) {
    int saved = errno;
    unsigned char byte = (unsigned char)number;
    if (dpfs_signal_fd >= 0) (void)!write(dpfs_signal_fd, &byte, 1);
    errno = saved;
}

int dpfs_loop_catch_signals(int notify_fd) {
    dpfs_signal_fd = notify_fd;
    struct sigaction action;
    memset(&action, 0, sizeof(action));
    action.sa_handler = dpfs_note_signal;
    sigemptyset(&action.sa_mask);
    action.sa_flags = SA_RESTART;
    struct sigaction ignore;
    memset(&ignore, 0, sizeof(ignore));
    ignore.sa_handler = SIG_IGN;
    sigemptyset(&ignore.sa_mask);
    if (sigaction(SIGPIPE, &ignore, NULL) != 0) return -errno;
    // A backing file is larger than the file it holds, so a write an app's file-size
    // limit allows can pass the daemon's (inherited from the shell that mounted): the
    // write must fail with EFBIG, not end the daemon.
    if (sigaction(SIGXFSZ, &ignore, NULL) != 0) return -errno;
    const int stopping[] = {SIGTERM, SIGINT, SIGHUP};
    for (size_t i = 0; i < sizeof(stopping) / sizeof(stopping[0]); i++) {
        if (sigaction(stopping[i], &action, NULL) != 0) return -errno;
    }
    return 0;
}

void dpfs_loop_release_signals(void) {
    struct sigaction fallback;
    memset(&fallback, 0, sizeof(fallback));
    fallback.sa_handler = SIG_DFL;
    sigemptyset(&fallback.sa_mask);
    const int stopping[] = {SIGTERM, SIGINT, SIGHUP};
    for (size_t i = 0; i < sizeof(stopping) / sizeof(stopping[0]); i++) sigaction(stopping[i], &fallback, NULL);
    dpfs_signal_fd = -1;
}
