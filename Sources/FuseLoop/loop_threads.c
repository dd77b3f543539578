#include "loop_threads.h"

#include <signal.h>

int dpfs_loop_create_thread(pthread_t *thread, void *(*body)(void *), void *argument) {
    sigset_t blocked, previous;
    sigemptyset(&blocked);
    sigaddset(&blocked, SIGTERM);
    sigaddset(&blocked, SIGINT);
    sigaddset(&blocked, SIGHUP);
    sigaddset(&blocked, SIGQUIT);
    pthread_sigmask(SIG_BLOCK, &blocked, &previous);
    int rc = pthread_create(thread, NULL, body, argument);
    pthread_sigmask(SIG_SETMASK, &previous, NULL);
    return rc;
}
