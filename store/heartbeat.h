/*
 * heartbeat.h - the daemon_heartbeat table: one row per node (a daemon
 * sharing the queue), which that daemon keeps fresh: its node id, host,
 * pid, start, last tick and lanes.  With SQLite there is one daemon per
 * database file, so one row; with PostgreSQL one per node.
 *
 * Ownership: struct store_heartbeat's strings are malloc'd, freed by
 * store_heartbeat_release(); those handed to a callback are the
 * caller's only during the call.
 */
#ifndef GOALD_STORE_HEARTBEAT_H
#define GOALD_STORE_HEARTBEAT_H

#include <stdint.h>

#include "store/store.h"

struct store_heartbeat {
    char *node_id, *host;
    long pid;
    int64_t started_at, last_tick; /* ms since the epoch */
    char *lanes;                   /* JSON object text, or NULL */
};

/* A node's pid and last tick (ms): *found 1, or 0 when that node has no
 * heartbeat (pid and last tick then untouched).  node_id NULL: the node
 * that beat last. */
int store_heartbeat_tick(store *st, const char *node_id, long *pid, int64_t *last_tick, int *found);

/* Write (insert or replace) the heartbeat row of hb->node_id. */
int store_heartbeat_write(store *st, const struct store_heartbeat *hb);

/* Read a node's heartbeat (node_id NULL: the node that beat last);
 * ERR_NOTFOUND (no message) when there is none. */
int store_heartbeat_read(store *st, const char *node_id, struct store_heartbeat *out);
void store_heartbeat_release(struct store_heartbeat *hb);

/* Call fn for each node's heartbeat, the freshest first; fn returns
 * non-zero to stop (that value is returned). */
int store_heartbeat_each(store *st, int (*fn)(const struct store_heartbeat *hb, void *ctx),
                         void *ctx);

/* Remove a node's heartbeat (its daemon stopped). */
int store_heartbeat_delete(store *st, const char *node_id);

#endif
