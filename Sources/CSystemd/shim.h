#ifndef DPFS_CSYSTEMD_SHIM_H
#define DPFS_CSYSTEMD_SHIM_H

// libsystemd: sd-bus for logind's signals (the lock that follows the session) and
// sd-journal for the daemon's log. Only non-variadic calls are used: Swift cannot call
// C's variadic ones. Without the define, sd_journal_sendv is a macro adding the C
// caller's file and line, which mean nothing here.
#define SD_JOURNAL_SUPPRESS_LOCATION
#include <systemd/sd-bus.h>
#include <systemd/sd-journal.h>

#endif
