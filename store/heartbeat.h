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

#endif
