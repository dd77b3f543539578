#ifndef DPFS_FUSE_ABI_H
#define DPFS_FUSE_ABI_H

// The kernel's side of FUSE that dpfs reads or writes itself, beside libfuse
// (linux/fuse.h): the opcodes, offsets and flags the session loop, the io_uring queues
// and KernelChannel.swift look at, and FUSE over io_uring (protocol 7.42), which the
// headers of Debian 12 predate: an entry's header area and the command each SQE
// carries. The one place these are spelled.

#include <stdint.h>

#define DPFS_FUSE_IN_HEADER_SIZE 40     // struct fuse_in_header
#define DPFS_FUSE_IN_OPCODE_OFFSET 4
#define DPFS_FUSE_IN_UNIQUE_OFFSET 8
#define DPFS_FUSE_OUT_HEADER_SIZE 16    // struct fuse_out_header
#define DPFS_FUSE_OUT_ERROR_OFFSET 4
#define DPFS_FUSE_OUT_UNIQUE_OFFSET 8

// Where a request says the caller lacks CAP_FSETID (its set-ID bits must go), by the
// offset of the flags after the in-header: fuse_write_in, fuse_setattr_in, fuse_open_in.
#define DPFS_FUSE_WRITE_FLAGS_OFFSET 20
#define DPFS_FUSE_WRITE_KILL_SUIDGID (1u << 2)
#define DPFS_FUSE_SETATTR_VALID_OFFSET 0
#define DPFS_FUSE_FATTR_KILL_SUIDGID (1u << 11)
#define DPFS_FUSE_OPEN_FLAGS_OFFSET 4
#define DPFS_FUSE_OPEN_KILL_SUIDGID (1u << 0)

// fuse_init_in and fuse_init_out, after their headers.
#define DPFS_FUSE_INIT_IN_FLAGS_OFFSET 12
#define DPFS_FUSE_INIT_IN_FLAGS2_OFFSET 16
#define DPFS_FUSE_INIT_OUT_FLAGS_OFFSET 12
#define DPFS_FUSE_INIT_OUT_MAX_WRITE_OFFSET 20
#define DPFS_FUSE_INIT_OUT_MAX_PAGES_OFFSET 28
#define DPFS_FUSE_INIT_OUT_FLAGS2_OFFSET 32
#define DPFS_FUSE_INIT_OUT_MINIMUM_SIZE 64
#define DPFS_FUSE_MAX_PAGES (1u << 22)
#define DPFS_FUSE_HANDLE_KILLPRIV_V2 (1u << 28)
#define DPFS_FUSE_INIT_EXT (1u << 30)
// FUSE_OVER_IO_URING, bit 41 of the flags: bit 9 of flags2.
#define DPFS_FUSE_OVER_IO_URING_FLAGS2 (1u << 9)
// The kernel's sizes when the INIT reply sets none (FUSE_MIN_READ_BUFFER, 32 pages).
#define DPFS_FUSE_MIN_READ_BUFFER 8192
#define DPFS_FUSE_DEFAULT_MAX_PAGES 32
#define DPFS_RING_OP_SIZE 128           // FUSE_URING_OP_IN_OUT_SZ

// FUSE_IO_URING_CMD_REGISTER and FUSE_IO_URING_CMD_COMMIT_AND_FETCH.
#define DPFS_RING_CMD_REGISTER 1
#define DPFS_RING_CMD_COMMIT_AND_FETCH 2

#define DPFS_FUSE_OPCODE_SETATTR 4
#define DPFS_FUSE_OPCODE_OPEN 14
#define DPFS_FUSE_OPCODE_READ 15
#define DPFS_FUSE_OPCODE_WRITE 16
#define DPFS_FUSE_OPCODE_FSYNC 20
#define DPFS_FUSE_OPCODE_INIT 26
#define DPFS_FUSE_OPCODE_FSYNCDIR 30
#define DPFS_FUSE_OPCODE_CREATE 35
#define DPFS_FUSE_OPCODE_FALLOCATE 43
#define DPFS_FUSE_OPCODE_LSEEK 46
#define DPFS_FUSE_OPCODE_COPY_FILE_RANGE 47
#define DPFS_FUSE_OPCODE_TMPFILE 51

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
