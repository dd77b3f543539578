#ifndef DPFS_CPOSTGRES_SHIM_H
#define DPFS_CPOSTGRES_SHIM_H

// libpq, PostgreSQL's own client library (Debian's libpq-dev): the keychain sync's
// connection to the account's server. Only non-variadic calls are used.
#include <libpq-fe.h>

#endif
