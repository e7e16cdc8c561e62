/*
 * heartbeat.h - the daemon_heartbeat table: the one row the running
 * daemon keeps fresh (its pid, start, last tick and lanes).
 */
#ifndef GOALD_STORE_HEARTBEAT_H
#define GOALD_STORE_HEARTBEAT_H

#include <stdint.h>

#include "store/store.h"

/* The daemon's pid and last tick (ms): *found 1, or 0 when no daemon has
 * written a heartbeat (pid and last tick then untouched). */
int store_heartbeat_tick(store *st, long *pid, int64_t *last_tick, int *found);

struct store_heartbeat {
    long pid;
    int64_t started_at, last_tick; /* ms since the epoch */
    char *lanes;                   /* JSON object text, or NULL */
};

/* Write (insert or replace) the heartbeat row. */
int store_heartbeat_write(store *st, long pid, int64_t started_at, int64_t last_tick,
                          const char *lanes_json);

/* Read the heartbeat; ERR_NOTFOUND (no message) when no daemon wrote one. */
int store_heartbeat_read(store *st, struct store_heartbeat *out);
void store_heartbeat_release(struct store_heartbeat *hb);

/* Remove the heartbeat (the daemon stopped). */
int store_heartbeat_delete(store *st);

#endif
