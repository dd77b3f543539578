#ifndef DPFS_TMPFILE_REQUEST_H
#define DPFS_TMPFILE_REQUEST_H

#include <stddef.h>

/// Turns a FUSE_TMPFILE request (its in-header at `request`) into a FUSE_CREATE
/// (tmpfile_request.c says why).
void dpfs_tmpfile_as_create(void *request, size_t size);

#endif
