/* heartbeat.c - the daemon_heartbeat table (see heartbeat.h). */
#include "store/heartbeat.h"

#include <stdlib.h>
#include <string.h>

#include "store/internal.h"
#include "util/err.h"

/* What store_heartbeat_tick() reads. */
struct tick_out {
    long *pid;
    int64_t *last_tick;
};

static void tick_fill(store_stmt *s, void *ctx)
{
    const struct tick_out *t = ctx;

    *t->pid = (long)store_col_i64(s, 0);
    *t->last_tick = store_col_i64(s, 1);
}

int store_heartbeat_tick(store *st, long *pid, int64_t *last_tick, int *found)
{
    static const char q[] = "SELECT pid, last_tick FROM daemon_heartbeat WHERE id = 1";
    struct tick_out t = {pid, last_tick};

    return store_get_row(st, "heartbeat", tick_fill, &t, found, q, NULL, 0);
}

int store_heartbeat_write(store *st, long pid, int64_t started_at, int64_t last_tick,
                          const char *lanes_json)
{
    static const char sql[] =
        "INSERT INTO daemon_heartbeat(id, pid, started_at, last_tick, lanes) VALUES (1, ?, ?, ?, ?)"
        " ON CONFLICT(id) DO UPDATE SET pid = excluded.pid, started_at = excluded.started_at,"
        " last_tick = excluded.last_tick, lanes = excluded.lanes";
    return store_exec_args(st, "heartbeat", NULL, sql,
                           STORE_ARGS(STORE_I64((int64_t)pid), STORE_I64(started_at),
                                      STORE_I64(last_tick), STORE_TEXT(lanes_json)));
}

static void heartbeat_fill(store_stmt *s, void *ctx)
{
    struct store_heartbeat *out = ctx;

    out->pid = (long)store_col_i64(s, 0);
    out->started_at = store_col_i64(s, 1);
    out->last_tick = store_col_i64(s, 2);
    out->lanes = store_col_strdup(s, 3);
}

int store_heartbeat_read(store *st, struct store_heartbeat *out)
{
    int found;
    int rc;

    memset(out, 0, sizeof(*out));
    rc = store_get_row(st, "heartbeat", heartbeat_fill, out, &found,
                       "SELECT pid, started_at, last_tick, lanes FROM daemon_heartbeat"
                       " WHERE id = 1",
                       NULL, 0);
    return rc == 0 && !found ? ERR_NOTFOUND : rc;
}

void store_heartbeat_release(struct store_heartbeat *hb)
{
    free(hb->lanes);
    hb->lanes = NULL;
}

int store_heartbeat_delete(store *st)
{
    return store_exec(st, "DELETE FROM daemon_heartbeat");
}
