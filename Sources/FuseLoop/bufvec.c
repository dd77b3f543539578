#include "fuse_loop.h"

void *dpfs_bufvec_memory(struct fuse_bufvec *bufv) {
    if (bufv->count != 1 || bufv->idx != 0 || (bufv->buf[0].flags & FUSE_BUF_IS_FD)) return NULL;
    return (char *)bufv->buf[0].mem + bufv->off;
}

ssize_t dpfs_bufvec_copy(struct fuse_bufvec *bufv, void *dst, size_t size) {
    struct fuse_bufvec out = FUSE_BUFVEC_INIT(size);
    out.buf[0].mem = dst;
    return fuse_buf_copy(&out, bufv, 0);
}
