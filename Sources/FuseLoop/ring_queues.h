#ifndef DPFS_RING_QUEUES_H
#define DPFS_RING_QUEUES_H

// The io_uring queues' state, shared by ring_queues.c and the session loop that
// starts and stops them.

#include <liburing.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>
#include "fuse_loop.h"
#include "ring_helpers.h"

/// Entries each queue registers at the start.
#define DPFS_RING_FIRST_ENTRIES 2
/// How many it may grow to while reads and writes are with the helpers.
#define DPFS_RING_MAX_ENTRIES 16
/// Entries a queue keeps with the kernel (for requests its thread serves itself) while
/// others are with the helpers.
#define DPFS_RING_SPARE_ENTRIES 2
/// Submission slots: a command per entry and the wake-up read, with room to spare.
#define DPFS_RING_SLOTS 32
_Static_assert(DPFS_RING_MAX_ENTRIES + 1 <= DPFS_RING_SLOTS, "a slot for each entry's command and the wake-up");
#define DPFS_RING_MAX_QUEUES 1024
/// Room before each payload for the in-header and the fixed argument.
#define DPFS_RING_HEADROOM 4096
/// How long a queue's thread waits before it looks whether the session is ending.
#define DPFS_RING_WAIT_NANOSECONDS 100000000L
/// How long it waits while a read's reply is still in an entry (then wipes it).
#define DPFS_RING_WIPE_NANOSECONDS 5000000L
/// SCHED_IDLE (linux/sched.h; glibc names it only under _GNU_SOURCE).
#define DPFS_SCHED_IDLE 5
/// I/O priorities (linux/ioprio.h, which glibc does not wrap): a class in the top
/// bits, a level 0-7 below.
#define DPFS_IOPRIO_WHO_PROCESS 1
#define DPFS_IOPRIO_CLASS_SHIFT 13
#define DPFS_IOPRIO_CLASS_BEST_EFFORT 2
/// A read or write this large goes to a helper even when it comes alone: its own work
/// (sealing or opening 64 KiB) dwarfs the hand-off's two wake-ups, and the
/// caller's CPU, which would serve it, is better left to the caller (readahead and
/// writeback come from a CPU that has work of its own).
#define DPFS_RING_LARGE_BYTES ((uint32_t)64 * 1024)
/// What stays resident of a payload buffer after a larger request (as for the loop's).
#define DPFS_RING_KEEP_BYTES ((size_t)64 * 1024)
/// Helpers for the requests that wait on the kernel (rare: SEEK_DATA and SEEK_HOLE).
#define DPFS_RING_KERNEL_HELPERS 2
/// How many of a queue's entries such requests may hold at once (the others must stay
/// free for the requests they wait for); one more is served in place, without the wait.
#define DPFS_RING_KERNEL_WAITS_MAX 4

struct dpfs_rings;
struct dpfs_ring_queue;

struct dpfs_ring_entry {
    struct dpfs_helper_job job;         // when a helper serves its request
    struct dpfs_ring_entry *done_next;  // in the queue's list of entries helpers served
    int away;               // with a helper (written by the queue's thread alone)
    struct dpfs_ring_queue *queue;
    struct dpfs_ring_headers *headers;
    struct iovec iov[2];
    char *region;           // headroom, then the payload buffer: one mapping
    size_t touched;         // bytes of the payload requests and replies have touched
    size_t plaintext;       // bytes of a READ reply (file contents) still in the payload
    uint64_t serving;       // the id of the request being served, 0 when none
    uint32_t opcode;        // of the request being served
    int replied;
};

struct dpfs_ring_queue {
    struct dpfs_rings *rings;
    unsigned int qid;
    pthread_t thread;
    int running;
    int ring_made;
    unsigned long trims;
    struct io_uring ring;
    unsigned int registered;            // entries made and registered, the first ones
    unsigned int away;                  // of them with a helper
    unsigned int lost;                  // of them whose command the kernel refused
    unsigned int kernel_waits;          // of them with a kernel helper
    int wake_fd;                        // an eventfd helpers write when they are done
    uint64_t wake_count;                // where the queue's read of it lands
    struct dpfs_ring_entry *done;       // entries helpers served, to be committed
    struct dpfs_ring_entry entries[DPFS_RING_MAX_ENTRIES];
};

/// The session's queues. Made before the loop; started by the loop once an INIT reply
/// took FUSE_OVER_IO_URING (`negotiated`, set by whoever amended it, with the payload
/// size the kernel will ask for).
struct dpfs_rings {
    struct fuse_session *se;
    int fd;
    dpfs_ring_observer observe;
    size_t payload_size;
    int negotiated;
    int started;
    int stopping;
    unsigned long served;   // requests served through the queues
    unsigned int busy;      // requests being served now, here or by helpers
    unsigned int kernel_waits;  // requests with kernel helpers, all queues together
    unsigned long trims;    // the loop's trims, copied here
    unsigned int count;
    struct dpfs_ring_queue *queues;
    struct dpfs_helpers helpers;
    /// Helpers for the requests that wait on the kernel (dpfs_ring_waits_on_kernel), apart
    /// from the others: the kernel's WRITEs they wait for then always find a helper free.
    struct dpfs_helpers kernel_helpers;
    pthread_key_t serving_key;  // the entry whose request the calling thread serves
};

/// Sets up and starts one queue per possible CPU; 0, or -1 (nothing started: requests
/// keep coming through /dev/fuse, which the kernel uses until every queue has an entry).
int dpfs_rings_start(struct dpfs_rings *rings);

/// Ends the queue threads (within a wait's length, once the helpers have answered what
/// they had), then the helpers, and frees the queues; the rings themselves stay for the
/// caller to free.
void dpfs_rings_stop(struct dpfs_rings *rings);

#endif
