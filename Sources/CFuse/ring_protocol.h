#ifndef DPFS_CFUSE_RING_PROTOCOL_H
#define DPFS_CFUSE_RING_PROTOCOL_H

// The kernel's side of FUSE over io_uring (linux/fuse.h, protocol 7.42), which the
// headers of Debian 12 predate: an entry's header area, the command each SQE carries,
// and the opcodes ring_queues.h looks at.

#include <stdint.h>

#define DPFS_RING_IN_HEADER_SIZE 40     // struct fuse_in_header
#define DPFS_RING_OUT_HEADER_SIZE 16    // struct fuse_out_header
#define DPFS_RING_OP_SIZE 128           // FUSE_URING_OP_IN_OUT_SZ

// FUSE_IO_URING_CMD_REGISTER and FUSE_IO_URING_CMD_COMMIT_AND_FETCH.
#define DPFS_RING_CMD_REGISTER 1
#define DPFS_RING_CMD_COMMIT_AND_FETCH 2

#define DPFS_RING_OPCODE_READ 15
#define DPFS_RING_OPCODE_WRITE 16
#define DPFS_RING_OPCODE_FSYNC 20
#define DPFS_RING_OPCODE_FSYNCDIR 30
#define DPFS_RING_OPCODE_FALLOCATE 43
#define DPFS_RING_OPCODE_COPY_FILE_RANGE 47

/// struct fuse_uring_ent_in_out: the request's id (the commit id of its reply) and the
/// size of what is in the payload buffer.
struct dpfs_ring_entry_state {
    uint64_t flags;
    uint64_t commit_id;
    uint32_t payload_size;
    uint32_t padding;
    uint64_t reserved;
};

/// struct fuse_uring_req_header: an entry's header area.
struct dpfs_ring_headers {
    char in_out[128];               // the in-header of a request, the out-header of a reply
    char op_in[DPFS_RING_OP_SIZE];  // the fixed argument of the request's opcode
    struct dpfs_ring_entry_state entry;
};

/// struct fuse_uring_cmd_req: the command area of an SQE.
struct dpfs_ring_command {
    uint64_t flags;
    uint64_t commit_id;
    uint16_t qid;
    uint8_t padding[6];
};

#endif
