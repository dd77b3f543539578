// FUSE over io_uring (Linux 6.14 and later, where the fuse module's enable_uring
// parameter is set), which libfuse 3.14 does not speak. The kernel then queues each
// request on the queue of the CPU its caller runs on, and a thread of the daemon pinned
// to that CPU (idle-class, so that its reply leaves the caller there) takes it and sends
// the reply and fetches the next request in one io_uring_enter: no read and writev per
// request, and no wake-up of a worker on the other CPU. Measured on this project's
// 2-vCPU machines with libfuse 3.18's example: creates 1.37x as fast unpinned,
// per-request daemon CPU 0.88x even with both sides pinned to one CPU.
//
// The protocol (linux/fuse.h, 7.42): after an INIT reply that takes FUSE_OVER_IO_URING,
// each queue (one per possible CPU) registers entries, each a 288-byte header area
// (the request's fuse_in_header, its opcode's fixed argument, and the entry's commit
// id and payload size) and a payload buffer for the rest of its arguments. Once every
// queue holds an entry, requests (but forgets and interrupts, which stay on /dev/fuse)
// come as completions; an entry's reply is its fuse_out_header in the header area and
// the reply's arguments in the payload, committed with COMMIT_AND_FETCH.
//
// libfuse still parses and dispatches each request: the in-header and fixed argument
// are copied in front of the payload (each payload buffer has room before it), which
// makes the request libfuse would have read from /dev/fuse, and the reply libfuse
// writes comes back through the session's writev (KernelChannel.swift), which hands it
// to dpfs_ring_take_reply when its id is an entry's.
//
// A request that may wait on the disk (a read, a write, an fsync) is served by a helper
// thread (ring_helpers.c) when others wait behind it, so that the queue's thread goes on
// serving the rest; the helper hands the entry back through a list and an eventfd the
// ring reads, and the queue's thread commits it (a single-issuer ring takes submissions
// from its own thread only). While entries are with helpers the queue registers more,
// up to 16, so that the kernel has some for the requests served in place. A small read
// or write that comes alone is served in place: a hand-off costs two more thread
// wake-ups, which a single stream of small reads feels; one of 64 KiB or more goes to a
// helper all the same (readahead, writeback).

#include "ring_queues.h"

#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "loop_threads.h"
#include "tmpfile_request.h"

struct dpfs_rings *dpfs_rings_new(struct fuse_session *se, dpfs_ring_observer observe) {
    struct dpfs_rings *rings = (struct dpfs_rings *)calloc(1, sizeof(struct dpfs_rings));
    if (rings == NULL) return NULL;
    if (pthread_key_create(&rings->serving_key, NULL) != 0) {
        free(rings);
        return NULL;
    }
    rings->se = se;
    rings->fd = fuse_session_fd(se);
    rings->observe = observe;
    return rings;
}

void dpfs_rings_note_negotiated(struct dpfs_rings *rings, size_t payload_size) {
    __atomic_store_n(&rings->payload_size, payload_size, __ATOMIC_RELAXED);
    __atomic_store_n(&rings->negotiated, 1, __ATOMIC_RELEASE);
}

/// The kernel makes one queue per possible CPU (nr_cpu_ids): the highest number in
/// /sys/devices/system/cpu/possible, plus one.
static unsigned int dpfs_ring_possible_cpus(void) {
    FILE *file = fopen("/sys/devices/system/cpu/possible", "re");
    if (file == NULL) return 0;
    char text[256];
    unsigned int highest = 0;
    int found = 0;
    if (fgets(text, sizeof(text), file) != NULL) {
        char *rest = NULL;
        for (char *part = strtok_r(text, ",\n", &rest); part != NULL; part = strtok_r(NULL, ",\n", &rest)) {
            unsigned int low, high;
            int n = sscanf(part, "%u-%u", &low, &high);
            if (n >= 1) {
                unsigned int top = n == 2 ? high : low;
                if (top >= highest) highest = top;
                found = 1;
            }
        }
    }
    fclose(file);
    return found ? highest + 1 : 0;
}

/// A free submission slot of `ring`, submitting what fills it if need be (it cannot be
/// full: each entry has one command in it at a time, and there is the wake-up read).
static struct io_uring_sqe *dpfs_ring_slot(struct io_uring *ring) {
    struct io_uring_sqe *sqe = io_uring_get_sqe(ring);
    if (sqe == NULL && io_uring_submit(ring) >= 0) sqe = io_uring_get_sqe(ring);
    return sqe;
}

static void dpfs_ring_prepare(struct dpfs_ring_entry *entry, uint32_t command, uint64_t commit_id) {
    struct io_uring_sqe *sqe = dpfs_ring_slot(&entry->queue->ring);
    if (sqe == NULL) return;
    memset(sqe, 0, 2 * sizeof(*sqe));  // SQE128: the command area runs into the second half
    sqe->opcode = IORING_OP_URING_CMD;
    sqe->fd = entry->queue->rings->fd;
    sqe->cmd_op = command;
    struct dpfs_ring_command *cmd = (struct dpfs_ring_command *)sqe->cmd;
    cmd->qid = (uint16_t)entry->queue->qid;
    cmd->commit_id = commit_id;
    if (command == DPFS_RING_CMD_REGISTER) {
        sqe->addr = (uint64_t)(uintptr_t)entry->iov;
        sqe->len = 2;
    }
    io_uring_sqe_set_data(sqe, entry);
}

/// The reply to the request `entry` serves, written by libfuse through the session's
/// writev: its header into the entry's header area and the rest into its payload.
/// The reply's length, or -1 when `iov` is not the reply to a request a queue serves.
ssize_t dpfs_ring_take_reply(struct dpfs_rings *rings, const struct iovec *iov, int count) {
    if (rings == NULL || !__atomic_load_n(&rings->started, __ATOMIC_ACQUIRE) || count < 1 ||
        iov[0].iov_len < DPFS_FUSE_OUT_HEADER_SIZE) return -1;
    uint64_t unique;
    memcpy(&unique, (const char *)iov[0].iov_base + DPFS_FUSE_OUT_UNIQUE_OFFSET, sizeof(unique));
    if (unique == 0) return -1;  // a notification
    // libfuse replies on the thread that dispatched the request (dpfs_ring_serve).
    struct dpfs_ring_entry *entry = (struct dpfs_ring_entry *)pthread_getspecific(rings->serving_key);
    if (entry == NULL || entry->serving != unique) return -1;
    size_t total = 0, room = entry->iov[1].iov_len;
    for (int i = 1; i < count; i++) total += iov[i].iov_len;
    if (total > room) return -1;  // cannot be: replies fit the buffer the kernel sized
    memcpy(entry->headers->in_out, iov[0].iov_base, DPFS_FUSE_OUT_HEADER_SIZE);
    char *at = (char *)entry->iov[1].iov_base;
    for (int i = 1; i < count; i++) {
        // A read's data already in place (dpfs_ring_read_space) is not copied onto itself.
        if (iov[i].iov_base != at) memcpy(at, iov[i].iov_base, iov[i].iov_len);
        at += iov[i].iov_len;
    }
    entry->headers->entry.payload_size = (uint32_t)total;
    if (total > entry->touched) entry->touched = total;
    if (entry->opcode == DPFS_FUSE_OPCODE_READ && total > entry->plaintext) entry->plaintext = total;
    entry->replied = 1;
    return (ssize_t)(DPFS_FUSE_OUT_HEADER_SIZE + total);
}

/// Where the calling thread may put the data of its reply to the read it serves for a
/// queue: that entry's payload buffer, which the kernel copies the reply from, so the
/// data is not copied there again (the copy of each 1 MiB read cost a cold sequential
/// read 4 to 10 % of its speed). NULL when the thread serves no read for a queue or
/// `size` does not fit. All `size` bytes count as file contents from now on, wiped as
/// a read's reply is, so a read that fails halfway leaves nothing either.
void *dpfs_ring_read_space(struct dpfs_rings *rings, size_t size) {
    if (rings == NULL || !__atomic_load_n(&rings->started, __ATOMIC_ACQUIRE)) return NULL;
    struct dpfs_ring_entry *entry = (struct dpfs_ring_entry *)pthread_getspecific(rings->serving_key);
    if (entry == NULL || entry->serving == 0 || entry->opcode != DPFS_FUSE_OPCODE_READ ||
        size > entry->iov[1].iov_len) return NULL;
    if (size > entry->plaintext) entry->plaintext = size;
    if (size > entry->touched) entry->touched = size;
    return entry->iov[1].iov_base;
}

int dpfs_ring_may_wait_on_kernel(struct dpfs_rings *rings) {
    if (rings == NULL || !__atomic_load_n(&rings->started, __ATOMIC_ACQUIRE)) return 1;
    struct dpfs_ring_entry *entry = (struct dpfs_ring_entry *)pthread_getspecific(rings->serving_key);
    if (entry == NULL) return 1;
    // Once the queues end, a thread that has gone would be the one to serve the wait.
    // Sequentially consistent with the seek's count (dispatch) and the queue threads'
    // last look at both: either the seek sees the end, or every queue sees the seek.
    if (__atomic_load_n(&rings->stopping, __ATOMIC_SEQ_CST)) return 0;
    // `away` was set before the hand-off, which the helpers' lock orders before this.
    return entry->away;
}

/// Serves the request in `entry`: rebuilds it as one buffer in front of the payload and
/// has libfuse dispatch it. A request libfuse did not answer gets EIO (each fetched
/// request must be committed).
static void dpfs_ring_serve(struct dpfs_ring_entry *entry) {
    struct dpfs_rings *rings = entry->queue->rings;
    uint32_t length;
    memcpy(&length, entry->headers->in_out, sizeof(length));
    memcpy(&entry->opcode, entry->headers->in_out + DPFS_FUSE_IN_OPCODE_OFFSET, sizeof(entry->opcode));
    uint32_t payload = entry->headers->entry.payload_size;
    // A read's reply before this request: what the request did not write over goes.
    if (entry->plaintext > payload) {
        memset((char *)entry->iov[1].iov_base + payload, 0, entry->plaintext - payload);
    }
    entry->plaintext = 0;
    uint64_t unique = entry->headers->entry.commit_id;
    size_t fixed = length >= DPFS_FUSE_IN_HEADER_SIZE + (size_t)payload
        ? length - DPFS_FUSE_IN_HEADER_SIZE - payload : 0;
    entry->replied = 0;
    if (fixed <= DPFS_RING_OP_SIZE && payload <= entry->iov[1].iov_len) {
        char *body = (char *)entry->iov[1].iov_base;
        char *request = body - fixed - DPFS_FUSE_IN_HEADER_SIZE;
        memcpy(request, entry->headers->in_out, DPFS_FUSE_IN_HEADER_SIZE);
        memcpy(request + DPFS_FUSE_IN_HEADER_SIZE, entry->headers->op_in, fixed);
        if (payload > entry->touched) entry->touched = payload;
        if (rings->observe != NULL) rings->observe(request, DPFS_FUSE_IN_HEADER_SIZE + fixed + payload);
        struct fuse_buf buf;
        memset(&buf, 0, sizeof(buf));
        buf.mem = request;
        buf.size = DPFS_FUSE_IN_HEADER_SIZE + fixed + payload;
        dpfs_tmpfile_as_create(request, buf.size);
        entry->serving = unique;
        pthread_setspecific(rings->serving_key, entry);
        fuse_session_process_buf(rings->se, &buf);
        pthread_setspecific(rings->serving_key, NULL);
        entry->serving = 0;
    }
    if (!entry->replied) {
        memset(entry->headers->in_out, 0, DPFS_FUSE_OUT_HEADER_SIZE);
        uint32_t size = DPFS_FUSE_OUT_HEADER_SIZE;
        int32_t error = -EIO;
        memcpy(entry->headers->in_out, &size, sizeof(size));
        memcpy(entry->headers->in_out + DPFS_FUSE_OUT_ERROR_OFFSET, &error, sizeof(error));
        memcpy(entry->headers->in_out + DPFS_FUSE_OUT_UNIQUE_OFFSET, &unique, sizeof(unique));
        entry->headers->entry.payload_size = 0;
    }
}

/// Whether a completion for `entry` waits in the queue's completion ring.
static int dpfs_ring_has_completion(struct dpfs_ring_queue *queue, struct dpfs_ring_entry *entry) {
    unsigned head;
    struct io_uring_cqe *cqe;
    io_uring_for_each_cqe(&queue->ring, head, cqe) {
        if (io_uring_cqe_get_data(cqe) == entry) return 1;
    }
    return 0;
}

/// File contents a read's reply left in an entry the kernel has not given a new request:
/// zeroed once the commit that carried them is in, at the thread's next wake (the next
/// request, or 5 ms), so a lock finds none. The ring runs its task work only inside
/// this thread's io_uring_enter (DEFER_TASKRUN), so out here the kernel writes into no
/// entry; one that got a request meanwhile has a completion, and dpfs_ring_serve clears
/// what that request left of the reply. An entry with a helper is its helper's.
static void dpfs_ring_wipe_replies(struct dpfs_ring_queue *queue) {
    for (unsigned int e = 0; e < queue->registered; e++) {
        struct dpfs_ring_entry *entry = &queue->entries[e];
        if (entry->away || entry->plaintext == 0 || dpfs_ring_has_completion(queue, entry)) continue;
        memset(entry->iov[1].iov_base, 0, entry->plaintext);
        entry->plaintext = 0;
    }
}

/// After the session has been idle a while, what large requests touched of the payloads
/// beyond the first 64 KiB goes.
static void dpfs_ring_trim(struct dpfs_ring_queue *queue) {
    for (unsigned int e = 0; e < queue->registered; e++) {
        struct dpfs_ring_entry *entry = &queue->entries[e];
        if (entry->away || entry->touched <= DPFS_RING_KEEP_BYTES || dpfs_ring_has_completion(queue, entry)) continue;
        madvise((char *)entry->iov[1].iov_base + DPFS_RING_KEEP_BYTES,
                entry->touched - DPFS_RING_KEEP_BYTES, MADV_DONTNEED);
        entry->touched = DPFS_RING_KEEP_BYTES;
    }
}

static size_t dpfs_ring_region_size(struct dpfs_rings *rings) {
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    return DPFS_RING_HEADROOM + (rings->payload_size + page - 1) / page * page;
}

/// Gives the queue's next entry its header area and payload buffer; 0, or -1.
static int dpfs_ring_entry_make(struct dpfs_ring_queue *queue) {
    if (queue->registered >= DPFS_RING_MAX_ENTRIES) return -1;
    struct dpfs_ring_entry *entry = &queue->entries[queue->registered];
    size_t region_size = dpfs_ring_region_size(queue->rings);
    entry->queue = queue;
    entry->headers = (struct dpfs_ring_headers *)calloc(1, sizeof(struct dpfs_ring_headers));
    if (entry->headers == NULL) return -1;
    void *region = mmap(NULL, region_size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (region == MAP_FAILED) {
        free(entry->headers);
        entry->headers = NULL;
        return -1;
    }
    entry->region = (char *)region;
    entry->iov[0].iov_base = entry->headers;
    entry->iov[0].iov_len = sizeof(struct dpfs_ring_headers);
    entry->iov[1].iov_base = entry->region + DPFS_RING_HEADROOM;
    entry->iov[1].iov_len = region_size - DPFS_RING_HEADROOM;
    queue->registered++;
    return 0;
}

/// Requests that may wait on the disk: served by a helper, so that the queue's thread
/// goes on with the other requests from its CPU (and the disk gets several at once).
static int dpfs_ring_waits_on_disk(uint32_t opcode) {
    switch (opcode) {
    case DPFS_FUSE_OPCODE_READ: case DPFS_FUSE_OPCODE_WRITE: case DPFS_FUSE_OPCODE_FSYNC:
    case DPFS_FUSE_OPCODE_FSYNCDIR: case DPFS_FUSE_OPCODE_FALLOCATE: case DPFS_FUSE_OPCODE_COPY_FILE_RANGE:
        return 1;
    default:
        return 0;
    }
}

/// Requests whose handler has the kernel drop the inode's pages (SEEK_DATA and
/// SEEK_HOLE write dirty mapped pages back first, Seek.swift): the kernel waits there
/// for WRITEs it sends to the queue of this CPU and for READs pending on it, so this
/// thread must go on serving meanwhile. Always served by a helper, one of their own.
static int dpfs_ring_waits_on_kernel(uint32_t opcode) {
    return opcode == DPFS_FUSE_OPCODE_LSEEK;
}

/// Counts a request handed to a kernel helper (`by` 1) or back from one (-1), on its
/// queue and for all queues (whose threads serve at the end while any is counted).
static void dpfs_ring_count_kernel_wait(struct dpfs_ring_queue *queue, int by) {
    queue->kernel_waits += by;
    __atomic_add_fetch(&queue->rings->kernel_waits, by, __ATOMIC_SEQ_CST);
}

/// The bytes a READ asks for or a WRITE carries (fuse_read_in and fuse_write_in both
/// hold it after the handle and the offset); 0 for other requests.
static uint32_t dpfs_ring_transfer_size(struct dpfs_ring_entry *entry, uint32_t opcode) {
    if (opcode != DPFS_FUSE_OPCODE_READ && opcode != DPFS_FUSE_OPCODE_WRITE) return 0;
    uint32_t size;
    memcpy(&size, entry->headers->op_in + 16, sizeof(size));
    return size;
}

/// A helper serves the request in an entry, then hands the entry back to its queue's
/// thread (which alone may submit to the ring) and wakes it if it was not woken yet.
static void dpfs_ring_serve_away(struct dpfs_helper_job *job) {
    struct dpfs_ring_entry *entry = (struct dpfs_ring_entry *)((char *)job - offsetof(struct dpfs_ring_entry, job));
    struct dpfs_ring_queue *queue = entry->queue;
    dpfs_ring_serve(entry);
    __atomic_add_fetch(&queue->rings->served, 1, __ATOMIC_RELAXED);
    struct dpfs_ring_entry *head = __atomic_load_n(&queue->done, __ATOMIC_RELAXED);
    do {
        entry->done_next = head;
    } while (!__atomic_compare_exchange_n(&queue->done, &head, entry, 1, __ATOMIC_RELEASE, __ATOMIC_RELAXED));
    // One that found the list empty wakes the thread, which takes the whole list.
    if (head == NULL) {
        uint64_t one = 1;
        ssize_t written = write(queue->wake_fd, &one, sizeof(one));
        (void)written;  // cannot fail: the count is far from overflowing
    }
}

static void dpfs_ring_arm_wake(struct dpfs_ring_queue *queue) {
    struct io_uring_sqe *sqe = dpfs_ring_slot(&queue->ring);
    if (sqe == NULL) return;
    memset(sqe, 0, 2 * sizeof(*sqe));
    io_uring_prep_read(sqe, queue->wake_fd, &queue->wake_count, sizeof(queue->wake_count), 0);
    io_uring_sqe_set_data(sqe, &queue->wake_count);
}

/// Commits the replies helpers finished; whether one of them carried file contents.
static int dpfs_ring_commit_served_away(struct dpfs_ring_queue *queue) {
    struct dpfs_ring_entry *entry = __atomic_exchange_n(&queue->done, NULL, __ATOMIC_ACQUIRE);
    int plaintext = 0;
    for (; entry != NULL; entry = entry->done_next) {
        entry->away = 0;
        queue->away--;
        if (dpfs_ring_waits_on_kernel(entry->opcode)) dpfs_ring_count_kernel_wait(queue, -1);
        __atomic_sub_fetch(&queue->rings->busy, 1, __ATOMIC_RELAXED);
        if (entry->plaintext > 0) plaintext = 1;
        dpfs_ring_prepare(entry, DPFS_RING_CMD_COMMIT_AND_FETCH, entry->headers->entry.commit_id);
    }
    return plaintext;
}

/// Serves the request a completion brought: here, or with a helper if it waits on the
/// kernel (while the queue has entries to spare for it), or if it may wait on the disk
/// and does not come `alone` (the only completion, no other entry away) or is large.
/// One that waits on the kernel goes to a helper even at the end, where it is answered
/// without the wait (dpfs_ring_may_wait_on_kernel).
/// Whether its reply, committed here, carried file contents.
static int dpfs_ring_dispatch(struct dpfs_ring_entry *entry, int alone) {
    struct dpfs_ring_queue *queue = entry->queue;
    struct dpfs_rings *rings = queue->rings;
    uint32_t opcode;
    memcpy(&opcode, entry->headers->in_out + DPFS_FUSE_IN_OPCODE_OFFSET, sizeof(opcode));
    __atomic_add_fetch(&rings->busy, 1, __ATOMIC_RELAXED);
    // At the end, nothing more goes away but seeks, which then do not wait: the thread
    // waits only for what is away.
    int waits_on_kernel = dpfs_ring_waits_on_kernel(opcode);
    int away = waits_on_kernel
        ? queue->kernel_waits < DPFS_RING_KERNEL_WAITS_MAX
        : dpfs_ring_waits_on_disk(opcode) &&
          (!(alone && queue->away == 0) || dpfs_ring_transfer_size(entry, opcode) >= DPFS_RING_LARGE_BYTES) &&
          !__atomic_load_n(&rings->stopping, __ATOMIC_ACQUIRE);
    if (away) {
        entry->away = 1;
        entry->opcode = opcode;
        queue->away++;
        if (waits_on_kernel) dpfs_ring_count_kernel_wait(queue, 1);
        entry->job.run = dpfs_ring_serve_away;
        struct dpfs_helpers *helpers = waits_on_kernel ? &rings->kernel_helpers : &rings->helpers;
        if (dpfs_helpers_submit(helpers, &entry->job) == 0) return 0;
        entry->away = 0;
        queue->away--;
        if (waits_on_kernel) dpfs_ring_count_kernel_wait(queue, -1);
    }
    dpfs_ring_serve(entry);
    __atomic_add_fetch(&rings->served, 1, __ATOMIC_RELAXED);
    __atomic_sub_fetch(&rings->busy, 1, __ATOMIC_RELAXED);
    dpfs_ring_prepare(entry, DPFS_RING_CMD_COMMIT_AND_FETCH, entry->headers->entry.commit_id);
    return entry->plaintext > 0;
}

static void *dpfs_ring_queue_thread(void *argument) {
    struct dpfs_ring_queue *queue = (struct dpfs_ring_queue *)argument;
    struct dpfs_rings *rings = queue->rings;
    // Requests come from callers on this CPU: served here, they need no other CPU woken.
    // (The system call: glibc declares its wrapper only under _GNU_SOURCE.)
    unsigned long cpus[DPFS_RING_MAX_QUEUES / (8 * sizeof(unsigned long))];
    memset(cpus, 0, sizeof(cpus));
    cpus[queue->qid / (8 * sizeof(unsigned long))] = 1UL << (queue->qid % (8 * sizeof(unsigned long)));
    syscall(SYS_sched_setaffinity, 0, sizeof(cpus), cpus);
    prctl(PR_SET_NAME, (unsigned long)"dpfs-ring", 0, 0, 0);
    // Idle policy: the scheduler counts a busy CPU as free for a thread it wakes only
    // when all that runs there is SCHED_IDLE, so the caller this thread's reply wakes
    // stays on its CPU instead of migrating at every reply (figures: docs/design.md,
    // "FUSE over io_uring"). A thread inherits its creator's class and an unprivileged
    // one cannot give an ordinary class back, so every helper that serves requests for
    // the queues is started before, by ordinary threads.
    struct sched_param no_priority = { 0 };
    sched_setscheduler(0, DPFS_SCHED_IDLE, &no_priority);
    // Under SCHED_IDLE a thread whose I/O class was never set gets the idle I/O class,
    // whose reads the disk serves only when nothing else waits; so it gets the
    // best-effort class at the level its nice value gave it (an ionice of the daemon,
    // which every thread inherits, stays).
    long inherited = syscall(SYS_ioprio_get, DPFS_IOPRIO_WHO_PROCESS, 0);
    if (inherited >= 0 && (inherited >> DPFS_IOPRIO_CLASS_SHIFT) == 0) {
        int level = (getpriority(PRIO_PROCESS, 0) + 20) / 5;
        level = level < 0 ? 0 : level > 7 ? 7 : level;
        syscall(SYS_ioprio_set, DPFS_IOPRIO_WHO_PROCESS, 0,
                (DPFS_IOPRIO_CLASS_BEST_EFFORT << DPFS_IOPRIO_CLASS_SHIFT) | level);
    }
    // Made here: a single-issuer ring belongs to the thread that makes it.
    unsigned flags = IORING_SETUP_SQE128 | IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN;
    if (io_uring_queue_init(DPFS_RING_SLOTS, &queue->ring, flags) != 0) return NULL;
    queue->ring_made = 1;
    for (unsigned int e = 0; e < queue->registered; e++) {
        dpfs_ring_prepare(&queue->entries[e], DPFS_RING_CMD_REGISTER, 0);
    }
    dpfs_ring_arm_wake(queue);
    int wipe = 0;
    // At the end, requests with helpers are still answered, and while any queue's
    // request waits on the kernel, every queue serves what that wait may need.
    while (!__atomic_load_n(&rings->stopping, __ATOMIC_SEQ_CST) || queue->away > 0 ||
           __atomic_load_n(&rings->kernel_waits, __ATOMIC_SEQ_CST) > 0) {
        struct __kernel_timespec wait = {
            .tv_sec = 0, .tv_nsec = wipe ? DPFS_RING_WIPE_NANOSECONDS : DPFS_RING_WAIT_NANOSECONDS };
        struct io_uring_cqe *cqe = NULL;
        int rc = io_uring_submit_and_wait_timeout(&queue->ring, &cqe, 1, &wait, NULL);
        // The commits that carried read replies are in: what no new request took goes.
        if (wipe) {
            dpfs_ring_wipe_replies(queue);
            wipe = 0;
        }
        if (rc == -ETIME || rc == -EINTR) {
            unsigned long trims = __atomic_load_n(&rings->trims, __ATOMIC_RELAXED);
            if (trims != queue->trims) {
                queue->trims = trims;
                dpfs_ring_trim(queue);
            }
            continue;
        }
        if (rc < 0 && rc != -EBUSY) break;
        unsigned head, seen = 0, requests = 0;
        int ended = 0, woken = 0;
        io_uring_for_each_cqe(&queue->ring, head, cqe) {
            if (io_uring_cqe_get_data(cqe) == &queue->wake_count) woken = 1;
            else if (cqe->res >= 0) requests++;
        }
        // What helpers finished goes back first: a request that comes alone is then
        // served here.
        if (woken) {
            if (dpfs_ring_commit_served_away(queue)) wipe = 1;
            dpfs_ring_arm_wake(queue);
        }
        io_uring_for_each_cqe(&queue->ring, head, cqe) {
            seen++;
            void *data = io_uring_cqe_get_data(cqe);
            if (data == &queue->wake_count || data == NULL) continue;
            if (cqe->res == -ENOTCONN || cqe->res == -ECONNABORTED || cqe->res == -ECANCELED) {
                ended = 1;  // the connection ended
            } else if (cqe->res < 0) {
                queue->lost++;  // the kernel refused this entry's command: it serves no more
            } else if (dpfs_ring_dispatch((struct dpfs_ring_entry *)data, requests == 1)) {
                wipe = 1;
            }
        }
        io_uring_cq_advance(&queue->ring, seen);
        if (ended) break;
        // Reads and writes are with the helpers: more entries, so that the kernel has
        // some for the requests served here and for more reads and writes at once.
        while (queue->registered - queue->away - queue->lost < DPFS_RING_SPARE_ENTRIES &&
               dpfs_ring_entry_make(queue) == 0) {
            dpfs_ring_prepare(&queue->entries[queue->registered - 1], DPFS_RING_CMD_REGISTER, 0);
        }
    }
    // Replies served but not yet committed go out: their callers need not wait for the
    // connection's end.
    dpfs_ring_commit_served_away(queue);
    // A seek still away when the queue broke off is no longer this queue's to commit:
    // the other queues must not keep serving for it.
    if (queue->kernel_waits > 0) dpfs_ring_count_kernel_wait(queue, -(int)queue->kernel_waits);
    io_uring_submit(&queue->ring);
    dpfs_ring_wipe_replies(queue);
    return NULL;
}

static void dpfs_ring_queue_release(struct dpfs_ring_queue *queue) {
    if (queue->ring_made) io_uring_queue_exit(&queue->ring);
    size_t region_size = dpfs_ring_region_size(queue->rings);
    for (unsigned int e = 0; e < queue->registered; e++) {
        struct dpfs_ring_entry *entry = &queue->entries[e];
        munmap(entry->region, region_size);
        free(entry->headers);
    }
    if (queue->wake_fd >= 0) close(queue->wake_fd);
}

int dpfs_rings_start(struct dpfs_rings *rings) {
    unsigned int count = dpfs_ring_possible_cpus();
    if (count == 0 || count > DPFS_RING_MAX_QUEUES) return -1;
    struct dpfs_ring_queue *queues = (struct dpfs_ring_queue *)calloc(count, sizeof(struct dpfs_ring_queue));
    if (queues == NULL) return -1;
    unsigned int ready = 0;
    for (; ready < count; ready++) {
        struct dpfs_ring_queue *queue = &queues[ready];
        queue->rings = rings;
        queue->qid = ready;
        queue->wake_fd = eventfd(0, EFD_CLOEXEC);
        int made = queue->wake_fd >= 0;
        for (unsigned int e = 0; made && e < DPFS_RING_FIRST_ENTRIES; e++) made = dpfs_ring_entry_make(queue) == 0;
        if (!made) { dpfs_ring_queue_release(queue); break; }
    }
    if (ready < count) {
        for (unsigned int q = 0; q < ready; q++) dpfs_ring_queue_release(&queues[q]);
        free(queues);
        return -1;
    }
    dpfs_helpers_init(&rings->helpers, DPFS_HELPERS_MAX);
    dpfs_helpers_start_all(&rings->helpers);
    dpfs_helpers_init(&rings->kernel_helpers, DPFS_RING_KERNEL_HELPERS);
    dpfs_helpers_start_all(&rings->kernel_helpers);
    rings->queues = queues;
    rings->count = count;
    __atomic_store_n(&rings->started, 1, __ATOMIC_RELEASE);
    for (unsigned int q = 0; q < count; q++) {
        queues[q].running = dpfs_loop_create_thread(&queues[q].thread, dpfs_ring_queue_thread, &queues[q]) == 0;
    }
    return 0;
}

void dpfs_rings_stop(struct dpfs_rings *rings) {
    if (rings == NULL || !__atomic_load_n(&rings->started, __ATOMIC_ACQUIRE)) return;
    __atomic_store_n(&rings->stopping, 1, __ATOMIC_SEQ_CST);
    for (unsigned int q = 0; q < rings->count; q++) {
        if (rings->queues[q].running) pthread_join(rings->queues[q].thread, NULL);
    }
    dpfs_helpers_stop(&rings->helpers);
    dpfs_helpers_stop(&rings->kernel_helpers);
    __atomic_store_n(&rings->started, 0, __ATOMIC_RELEASE);
    for (unsigned int q = 0; q < rings->count; q++) dpfs_ring_queue_release(&rings->queues[q]);
    free(rings->queues);
    rings->queues = NULL;
    rings->count = 0;
}

void dpfs_rings_free(struct dpfs_rings *rings) {
    if (rings == NULL) return;
    pthread_key_delete(rings->serving_key);
    free(rings);
}

int dpfs_rings_started(struct dpfs_rings *rings) {
    return rings != NULL && __atomic_load_n(&rings->started, __ATOMIC_ACQUIRE);
}
