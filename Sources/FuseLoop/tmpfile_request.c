#include "tmpfile_request.h"

#include <stdint.h>
#include <string.h>
#include "fuse_abi.h"

// An open with O_TMPFILE in the mount reaches the daemon as FUSE_TMPFILE (protocol
// 7.37), which libfuse 3.14 answers ENOSYS. It carries what FUSE_CREATE carries, the
// new dentry's name "/" as the name, and takes the same reply, so it is handed to the
// filesystem's create as one: no name the kernel sends otherwise holds a slash.

void dpfs_tmpfile_as_create(void *request, size_t size) {
    uint32_t opcode;
    if (size < DPFS_FUSE_IN_OPCODE_OFFSET + sizeof(opcode)) return;
    memcpy(&opcode, (char *)request + DPFS_FUSE_IN_OPCODE_OFFSET, sizeof(opcode));
    if (opcode != DPFS_FUSE_OPCODE_TMPFILE) return;
    opcode = DPFS_FUSE_OPCODE_CREATE;
    memcpy((char *)request + DPFS_FUSE_IN_OPCODE_OFFSET, &opcode, sizeof(opcode));
}
