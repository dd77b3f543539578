#ifndef DPFS_CSQLITECONFIG_SHIM_H
#define DPFS_CSQLITECONFIG_SHIM_H
// sqlite3_db_config settings GRDB does not offer; the function is variadic, which Swift
// cannot call.
#include <sqlite3.h>
#include <stdbool.h>

/// Whether the connection `db` now leaves its WAL unchecked at close: no checkpoint,
/// no -wal deleted (SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE).
static inline bool dpfs_sqlite3_no_checkpoint_on_close(sqlite3 *db) {
    int set = 0;
    return sqlite3_db_config(db, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1, &set) == SQLITE_OK && set == 1;
}

#endif
