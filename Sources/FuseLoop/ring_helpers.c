#include "ring_helpers.h"

#include <string.h>
#include <sys/prctl.h>
#include "loop_threads.h"

void dpfs_helpers_init(struct dpfs_helpers *helpers, unsigned int max) {
    memset(helpers, 0, sizeof(*helpers));
    pthread_mutex_init(&helpers->lock, NULL);
    pthread_cond_init(&helpers->work, NULL);
    helpers->max = max < 1 ? 1 : max > DPFS_HELPERS_MAX ? DPFS_HELPERS_MAX : max;
}

static void *dpfs_helper_thread(void *argument) {
    struct dpfs_helpers *helpers = (struct dpfs_helpers *)argument;
    prctl(PR_SET_NAME, (unsigned long)"dpfs-ring-io", 0, 0, 0);  // what ps -L and the tests see
    pthread_mutex_lock(&helpers->lock);
    for (;;) {
        while (helpers->head == NULL && !helpers->stopping) {
            helpers->idle++;
            pthread_cond_wait(&helpers->work, &helpers->lock);
            helpers->idle--;
        }
        struct dpfs_helper_job *job = helpers->head;
        if (job == NULL) break;  // stopping, and nothing left
        helpers->head = job->next;
        if (helpers->head == NULL) helpers->tail = NULL;
        helpers->queued--;
        pthread_mutex_unlock(&helpers->lock);
        job->run(job);
        pthread_mutex_lock(&helpers->lock);
    }
    pthread_mutex_unlock(&helpers->lock);
    return NULL;
}

void dpfs_helpers_start_all(struct dpfs_helpers *helpers) {
    pthread_mutex_lock(&helpers->lock);
    while (helpers->count < helpers->max &&
           dpfs_loop_create_thread(&helpers->threads[helpers->count], dpfs_helper_thread, helpers) == 0) {
        helpers->count++;
    }
    pthread_mutex_unlock(&helpers->lock);
}

int dpfs_helpers_submit(struct dpfs_helpers *helpers, struct dpfs_helper_job *job) {
    pthread_mutex_lock(&helpers->lock);
    // Each queued job has an idle helper coming for it, or one is started.
    if (helpers->queued >= helpers->idle && helpers->count < helpers->max &&
        dpfs_loop_create_thread(&helpers->threads[helpers->count], dpfs_helper_thread, helpers) == 0) {
        helpers->count++;
    }
    if (helpers->count == 0) {
        pthread_mutex_unlock(&helpers->lock);
        return -1;
    }
    job->next = NULL;
    if (helpers->tail != NULL) helpers->tail->next = job; else helpers->head = job;
    helpers->tail = job;
    helpers->queued++;
    pthread_cond_signal(&helpers->work);
    pthread_mutex_unlock(&helpers->lock);
    return 0;
}

void dpfs_helpers_stop(struct dpfs_helpers *helpers) {
    pthread_mutex_lock(&helpers->lock);
    helpers->stopping = 1;
    pthread_cond_broadcast(&helpers->work);
    unsigned int count = helpers->count;
    pthread_mutex_unlock(&helpers->lock);
    for (unsigned int i = 0; i < count; i++) pthread_join(helpers->threads[i], NULL);
    pthread_cond_destroy(&helpers->work);
    pthread_mutex_destroy(&helpers->lock);
}
