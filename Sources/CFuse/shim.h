#ifndef DPFS_CFUSE_SHIM_H
#define DPFS_CFUSE_SHIM_H

// libfuse picks its ABI from FUSE_USE_VERSION; it must be set before the include.
// 3.12 is the oldest version with fuse_loop_cfg_*; Debian 12 ships 3.14.
#define FUSE_USE_VERSION 312
#include <fuse3/fuse_lowlevel.h>
#include <sys/xattr.h>
#include <sys/file.h>
#include <sys/statvfs.h>
#include <sys/socket.h>
#include <sys/un.h>

// fuse_session_loop_mt is a macro that selects a versioned symbol; Swift cannot
// call macros, so this wrapper pins the version.
static inline int dpfs_session_loop_mt(struct fuse_session *se, unsigned int max_threads) {
    struct fuse_loop_config *config = fuse_loop_cfg_create();
    if (config == NULL) return -1;
    fuse_loop_cfg_set_max_threads(config, max_threads);
    fuse_loop_cfg_set_clone_fd(config, 0);
    int rc = fuse_session_loop_mt(se, config);
    fuse_loop_cfg_destroy(config);
    return rc;
}

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
