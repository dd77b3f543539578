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

#endif
