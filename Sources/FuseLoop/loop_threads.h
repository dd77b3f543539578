#ifndef DPFS_LOOP_THREADS_H
#define DPFS_LOOP_THREADS_H

#include <pthread.h>

/// pthread_create for the loop's threads: the session's signals go to the thread that
/// waits for its end, never to them.
int dpfs_loop_create_thread(pthread_t *thread, void *(*body)(void *), void *argument);

#endif
