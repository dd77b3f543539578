// dlopen's libpq on first use (postgres_loader.h says why). The library stays loaded
// for the life of the process: its calls are kept in one table.
#include "postgres_loader.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>

/// libpq's soname, the same since PostgreSQL 8 (Debian's libpq5).
#define DPFS_LIBPQ_SONAME "libpq.so.5"

static pthread_once_t dpfs_libpq_once = PTHREAD_ONCE_INIT;
static struct dpfs_libpq dpfs_libpq_table;
static const struct dpfs_libpq *dpfs_libpq_loaded;
static char dpfs_libpq_reason[256];

static int dpfs_libpq_find(void *library, const char *name, void **slot) {
    dlerror();
    void *symbol = dlsym(library, name);
    if (symbol == NULL) {
        const char *reason = dlerror();
        snprintf(dpfs_libpq_reason, sizeof(dpfs_libpq_reason), "%s", reason != NULL ? reason : name);
        return 0;
    }
    *slot = symbol;
    return 1;
}

static void dpfs_libpq_load(void) {
    void *library = dlopen(DPFS_LIBPQ_SONAME, RTLD_NOW | RTLD_LOCAL);
    if (library == NULL) {
        const char *reason = dlerror();
        snprintf(dpfs_libpq_reason, sizeof(dpfs_libpq_reason), "%s", reason != NULL ? reason : DPFS_LIBPQ_SONAME);
        return;
    }
    struct dpfs_libpq *t = &dpfs_libpq_table;
#define DPFS_FIND(field, name) dpfs_libpq_find(library, #name, (void **)&t->field)
    int found = DPFS_FIND(connectdbParams, PQconnectdbParams) && DPFS_FIND(status, PQstatus) &&
        DPFS_FIND(errorMessage, PQerrorMessage) && DPFS_FIND(finish, PQfinish) &&
        DPFS_FIND(socket, PQsocket) && DPFS_FIND(conninfoParse, PQconninfoParse) &&
        DPFS_FIND(conninfoFree, PQconninfoFree) && DPFS_FIND(setnonblocking, PQsetnonblocking) &&
        DPFS_FIND(sendQueryParams, PQsendQueryParams) && DPFS_FIND(flush, PQflush) &&
        DPFS_FIND(isBusy, PQisBusy) && DPFS_FIND(getResult, PQgetResult) &&
        DPFS_FIND(resultStatus, PQresultStatus) && DPFS_FIND(resultErrorMessage, PQresultErrorMessage) &&
        DPFS_FIND(resultErrorField, PQresultErrorField) && DPFS_FIND(clear, PQclear) &&
        DPFS_FIND(consumeInput, PQconsumeInput) && DPFS_FIND(notifies, PQnotifies) &&
        DPFS_FIND(freemem, PQfreemem) && DPFS_FIND(ntuples, PQntuples) &&
        DPFS_FIND(cmdTuples, PQcmdTuples) && DPFS_FIND(getisnull, PQgetisnull) &&
        DPFS_FIND(getvalue, PQgetvalue) && DPFS_FIND(setNoticeReceiver, PQsetNoticeReceiver);
#undef DPFS_FIND
    if (!found) {
        dlclose(library);
        return;
    }
    dpfs_libpq_loaded = t;
}

const struct dpfs_libpq *dpfs_libpq(void) {
    pthread_once(&dpfs_libpq_once, dpfs_libpq_load);
    return dpfs_libpq_loaded;
}

const char *dpfs_libpq_error(void) {
    pthread_once(&dpfs_libpq_once, dpfs_libpq_load);
    return dpfs_libpq_reason;
}
