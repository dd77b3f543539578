#ifndef DPFS_CFUSE_SHIM_H
#define DPFS_CFUSE_SHIM_H

// libfuse picks its ABI from FUSE_USE_VERSION; it must be set before the include.
// Debian 12 ships 3.14.
#define FUSE_USE_VERSION 312
#include <fuse3/fuse_lowlevel.h>
#include <sys/xattr.h>
#include <sys/file.h>
#include <sys/statvfs.h>
#include <sys/socket.h>
#include <sys/un.h>

#include "session_loop.h"

/// The bytes of a write request when they sit in one memory buffer (no splice),
/// or NULL.
static inline void *dpfs_bufvec_memory(struct fuse_bufvec *bufv) {
    if (bufv->count != 1 || bufv->idx != 0 || (bufv->buf[0].flags & FUSE_BUF_IS_FD)) return NULL;
    return (char *)bufv->buf[0].mem + bufv->off;
}

/// Copies a request's bytes (from memory or a pipe) into `dst`.
static inline ssize_t dpfs_bufvec_copy(struct fuse_bufvec *bufv, void *dst, size_t size) {
    struct fuse_bufvec out = FUSE_BUFVEC_INIT(size);
    out.buf[0].mem = dst;
    return fuse_buf_copy(&out, bufv, 0);
}
#endif
