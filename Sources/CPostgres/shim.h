#ifndef DPFS_CPOSTGRES_SHIM_H
#define DPFS_CPOSTGRES_SHIM_H

// libpq's declarations, PostgreSQL's own client library (Debian's libpq-dev): the
// keychain sync's connection to the account's server. Not linked: PostgresLoader
// loads the library at the first connection. Debian keeps the header in a directory
// of its own, which pkg-config would add (with the library to link, unwanted).
#if __has_include(<postgresql/libpq-fe.h>)
#include <postgresql/libpq-fe.h>
#else
#include <libpq-fe.h>
#endif

#endif
