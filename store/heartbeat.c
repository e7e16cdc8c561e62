/* heartbeat.c - the daemon_heartbeat table (see heartbeat.h). */
#include "store/heartbeat.h"

#include "store/internal.h"

int store_heartbeat_tick(store *st, long *pid, int64_t *last_tick, int *found)
{
    static const char q[] = "SELECT pid, last_tick FROM daemon_heartbeat WHERE id = 1";
    sqlite3_stmt *s;
    int rc = store_prepare(st, &s, q);

    *found = 0;
    if (rc)
        return rc;
    switch (sqlite3_step(s)) {
    case SQLITE_ROW:
        *pid = (long)sqlite3_column_int64(s, 0);
        *last_tick = sqlite3_column_int64(s, 1);
        *found = 1;
        break;
    case SQLITE_DONE:
        break;
    default:
        rc = store_err(st, "heartbeat");
    }
    store_done(s);
    return rc;
}
