#include "fuse_loop.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

// libfuse tells why it refuses options only through its log, which goes to the
// daemon's log: a user who mistyped an option saw "rejected the options" and nothing
// of which one. A session made and destroyed with the log taken here says it, before
// anything is mounted (fuse_session_new only parses and allocates).

static char *complaint;
static size_t complaint_size;

static void take_log(enum fuse_log_level level, const char *format, va_list arguments) {
    (void)level;
    size_t used = strlen(complaint);
    if (used + 1 < complaint_size) vsnprintf(complaint + used, complaint_size - used, format, arguments);
}

int dpfs_fuse_check_options(const char *options, char *why, size_t size) {
    if (size == 0) return -1;
    why[0] = '\0';
    char *argv[] = {"dpfs", "-o", (char *)options, NULL};
    struct fuse_args args = FUSE_ARGS_INIT(3, argv);
    struct fuse_lowlevel_ops ops;
    memset(&ops, 0, sizeof ops);
    complaint = why;
    complaint_size = size;
    fuse_set_log_func(take_log);
    struct fuse_session *se = fuse_session_new(&args, &ops, sizeof ops, NULL);
    fuse_set_log_func(NULL);
    complaint = NULL;
    fuse_opt_free_args(&args);
    if (se == NULL) return -1;
    fuse_session_destroy(se);
    return 0;
}
