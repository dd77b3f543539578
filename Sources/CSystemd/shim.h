#ifndef DPFS_CSYSTEMD_SHIM_H
#define DPFS_CSYSTEMD_SHIM_H

// sd-bus from libsystemd, for logind's signals (the lock that follows the session).
// Only its non-variadic calls are used: Swift cannot call C's variadic ones.
#include <systemd/sd-bus.h>

#endif
