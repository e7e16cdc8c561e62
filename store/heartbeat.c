/* heartbeat.c - the daemon_heartbeat table, a row per node (see heartbeat.h). */
#include "store/heartbeat.h"

#include <stdlib.h>
#include <string.h>

#include "store/internal.h"
#include "util/err.h"

#define HB_COLS "node_id, host, pid, started_at, last_tick, lanes FROM daemon_heartbeat"

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

int store_heartbeat_tick(store *st, const char *node_id, long *pid, int64_t *last_tick, int *found)
{
    static const char q[] = "SELECT pid, last_tick FROM daemon_heartbeat"
                            " WHERE node_id = ?1 OR ?1 IS NULL ORDER BY last_tick DESC LIMIT 1";
    struct tick_out t = {pid, last_tick};

    return store_get_row(st, "heartbeat", tick_fill, &t, found, q, STORE_ARGS(STORE_TEXT(node_id)));
}

int store_heartbeat_write(store *st, const struct store_heartbeat *hb)
{
    static const char sql[] =
        "INSERT INTO daemon_heartbeat(node_id, host, pid, started_at, last_tick, lanes)"
        " VALUES (?, ?, ?, ?, ?, ?)"
        " ON CONFLICT(node_id) DO UPDATE SET host = excluded.host, pid = excluded.pid,"
        " started_at = excluded.started_at, last_tick = excluded.last_tick,"
        " lanes = excluded.lanes";
    return store_exec_args(st, "heartbeat", NULL, sql,
                           STORE_ARGS(STORE_TEXT(hb->node_id), STORE_TEXT(hb->host ? hb->host : ""),
                                      STORE_I64((int64_t)hb->pid), STORE_I64(hb->started_at),
                                      STORE_I64(hb->last_tick),
                                      STORE_TEXT(hb->lanes ? hb->lanes : "{}")));
}

static void heartbeat_fill(store_stmt *s, void *ctx)
{
    struct store_heartbeat *out = ctx;

    out->node_id = store_col_strdup(s, 0);
    out->host = store_col_strdup(s, 1);
    out->pid = (long)store_col_i64(s, 2);
    out->started_at = store_col_i64(s, 3);
    out->last_tick = store_col_i64(s, 4);
    out->lanes = store_col_strdup(s, 5);
}

int store_heartbeat_read(store *st, const char *node_id, struct store_heartbeat *out)
{
    static const char q[] =
        "SELECT " HB_COLS " WHERE node_id = ?1 OR ?1 IS NULL ORDER BY last_tick DESC LIMIT 1";
    int found;
    int rc;

    memset(out, 0, sizeof(*out));
    rc = store_get_row(st, "heartbeat", heartbeat_fill, out, &found, q,
                       STORE_ARGS(STORE_TEXT(node_id)));
    return rc == 0 && !found ? ERR_NOTFOUND : rc;
}

void store_heartbeat_release(struct store_heartbeat *hb)
{
    free(hb->node_id);
    free(hb->host);
    free(hb->lanes);
    memset(hb, 0, sizeof(*hb));
}

int store_heartbeat_each(store *st, int (*fn)(const struct store_heartbeat *hb, void *ctx),
                         void *ctx)
{
    static const char q[] = "SELECT " HB_COLS " ORDER BY last_tick DESC, node_id";
    store_stmt *s;
    int rc = store_prepare(st, &s, q), stop = 0;

    if (rc)
        return rc;
    while (!stop && store_next_row(st, s, "heartbeats", &rc)) {
        struct store_heartbeat hb;
        memset(&hb, 0, sizeof(hb));
        heartbeat_fill(s, &hb);
        stop = fn(&hb, ctx);
        store_heartbeat_release(&hb);
    }
    store_done(s);
    return rc ? rc : stop;
}

int store_heartbeat_delete(store *st, const char *node_id)
{
    return store_exec_args(st, "heartbeat", NULL, "DELETE FROM daemon_heartbeat WHERE node_id = ?",
                           STORE_ARGS(STORE_TEXT(node_id)));
}
