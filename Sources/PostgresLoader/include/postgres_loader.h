#ifndef DPFS_POSTGRES_LOADER_H
#define DPFS_POSTGRES_LOADER_H

// libpq, loaded the first time keychain sync needs it instead of linked: it brings
// some twenty libraries (OpenSSL, GnuTLS, Kerberos, LDAP, SASL, ...) whose relocated
// data every process would carry from its start, though most devices are in no sync
// account. Each call's type is libpq-fe.h's own, so a mismatch does not compile.
// Debian keeps the header in a directory of its own (CPostgres/shim.h says why).
#if __has_include(<postgresql/libpq-fe.h>)
#include <postgresql/libpq-fe.h>
#else
#include <libpq-fe.h>
#endif

struct dpfs_libpq {
    __typeof__(PQconnectdbParams) *_Nonnull connectdbParams;
    __typeof__(PQstatus) *_Nonnull status;
    __typeof__(PQerrorMessage) *_Nonnull errorMessage;
    __typeof__(PQfinish) *_Nonnull finish;
    __typeof__(PQsocket) *_Nonnull socket;
    __typeof__(PQconninfoParse) *_Nonnull conninfoParse;
    __typeof__(PQconninfoFree) *_Nonnull conninfoFree;
    __typeof__(PQsetnonblocking) *_Nonnull setnonblocking;
    __typeof__(PQsendQueryParams) *_Nonnull sendQueryParams;
    __typeof__(PQflush) *_Nonnull flush;
    __typeof__(PQisBusy) *_Nonnull isBusy;
    __typeof__(PQgetResult) *_Nonnull getResult;
    __typeof__(PQresultStatus) *_Nonnull resultStatus;
    __typeof__(PQresultErrorMessage) *_Nonnull resultErrorMessage;
    __typeof__(PQresultErrorField) *_Nonnull resultErrorField;
    __typeof__(PQclear) *_Nonnull clear;
    __typeof__(PQconsumeInput) *_Nonnull consumeInput;
    __typeof__(PQnotifies) *_Nonnull notifies;
    __typeof__(PQfreemem) *_Nonnull freemem;
    __typeof__(PQntuples) *_Nonnull ntuples;
    __typeof__(PQcmdTuples) *_Nonnull cmdTuples;
    __typeof__(PQgetisnull) *_Nonnull getisnull;
    __typeof__(PQgetvalue) *_Nonnull getvalue;
    __typeof__(PQsetNoticeReceiver) *_Nonnull setNoticeReceiver;
};

/// libpq's calls, loaded once (the first caller loads, others wait); NULL when the
/// library or one of its calls cannot be had, the reason then in `dpfs_libpq_error`.
const struct dpfs_libpq *_Nullable dpfs_libpq(void);

/// Why `dpfs_libpq` returned NULL (dlerror's text); empty otherwise.
const char *_Nonnull dpfs_libpq_error(void);

#endif
